// Minimal view until the full dashboard lands: lists routers from the API.
async function load() {
  const routers = await (await fetch('/api/http/routers')).json();
  const app = document.getElementById('app');
  app.textContent = '';
  const table = document.createElement('table');
  for (const r of routers) {
    const row = table.insertRow();
    for (const text of [r.name, r.rule, r.status]) row.insertCell().textContent = text;
  }
  app.appendChild(table);
}
load();
setInterval(load, 2000);
