//! The static configuration: a configuration file (TOML or YAML), the
//! environment and flags, through the real loader (`static_config::load`),
//! which merges them and validates the result.
//!
//! Input: one byte choosing the file (`t` gangway.toml, `y` gangway.yml,
//! anything else none), the file's text, then after a NUL byte one argument
//! per line; a line `GANGWAY_NAME=value` is an environment variable.
//! Arguments naming another configuration file are dropped, so the loader
//! only ever reads the file written here.

#![no_main]

use gangway::config::static_config::load;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A directory of this process's own, holding at most the one file.
fn workdir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("gangway-fuzz-static-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory for the fuzz target");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (file, settings) = text.split_once('\0').unwrap_or((text, ""));
    let dir = workdir();
    let toml = dir.join("gangway.toml");
    let yaml = dir.join("gangway.yml");
    let _ = std::fs::remove_file(&toml);
    let _ = std::fs::remove_file(&yaml);
    match selector {
        b't' => std::fs::write(&toml, file).expect("writing the configuration file"),
        b'y' => std::fs::write(&yaml, file).expect("writing the configuration file"),
        _ => {}
    }
    let mut args = Vec::new();
    let mut env = Vec::new();
    for line in settings.lines() {
        if line.to_ascii_lowercase().contains("configfile") {
            continue;
        }
        match line.split_once('=') {
            Some((name, value)) if name.starts_with("GANGWAY_") => {
                env.push((name.to_owned(), value.to_owned()));
            }
            _ => args.push(line.to_owned()),
        }
    }
    let _ = load(&args, &env, dir);
});
