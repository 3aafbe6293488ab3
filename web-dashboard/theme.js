// Applies a remembered theme before the first paint, so a dark page never
// flashes white. Loaded as a plain blocking script from <head>.
try {
  const t = localStorage.getItem('gangway-theme');
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
} catch (_) { /* storage may be off */ }
