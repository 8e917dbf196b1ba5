//! `bin/pi-context-dream-cron`: quiet on skips and held locks, loud on failures, always logs.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

use super::World;
use crate::support::{Run, run};

fn cron(w: &World, extra: &[&str]) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bin/pi-context-dream-cron");
    let mut cmd = Command::new("/bin/sh");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", w.root())
        .env("TZ", "UTC")
        .env("PI_CONTEXT_NOW", crate::support::NOW)
        .env("PI_CONTEXT_BIN", env!("CARGO_BIN_EXE_pi-context"))
        .env("PI_CONTEXT_PI_BIN", super::fake_pi())
        .env("PI_NOTES_HOME", w.home())
        .current_dir(w.path("work"))
        .arg(script)
        .args(extra);
    run(cmd, "")
}

fn log(w: &World) -> String {
    fs::read_to_string(w.path(".local/state/pi-context/dream.log")).unwrap_or_default()
}

#[test]
fn cron_wrapper_is_quiet_on_skip_success_and_lock_and_loud_on_failure() {
    let w = World::new();
    let skip = cron(&w, &[]);
    assert_eq!(
        (skip.code, skip.stdout.as_str(), skip.stderr.as_str()),
        (0, "", "")
    );
    assert!(log(&w).contains("exit=0\n{\"ok\":true,\"data\":{\"outcome\":\"skipped\""));

    let dreamed = cron(&w, &["--force"]);
    assert_eq!(
        (
            dreamed.code,
            dreamed.stdout.as_str(),
            dreamed.stderr.as_str()
        ),
        (0, "", "")
    );
    assert!(log(&w).contains("\"outcome\":\"dreamed\""));

    fs::write(w.home().join(".dream.lock"), "1 someone-else").unwrap();
    let held = cron(&w, &["--force"]);
    assert_eq!(
        (held.code, held.stdout.as_str(), held.stderr.as_str()),
        (75, "", "")
    );
    // An old lock gets a hint (cron mails it), still without stealing the lock.
    fs::File::options()
        .write(true)
        .open(w.home().join(".dream.lock"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 86400))
        .unwrap();
    let stale = cron(&w, &["--force"]);
    assert_eq!(stale.code, 75);
    assert!(
        stale.stderr.contains("remove it by hand"),
        "{}",
        stale.stderr
    );
    assert_eq!(
        fs::read(w.home().join(".dream.lock")).unwrap(),
        b"1 someone-else"
    );
    fs::remove_file(w.home().join(".dream.lock")).unwrap();

    let failed = cron(&w, &["--force", "--pi-bin", "/nonexistent/pi"]);
    assert_eq!(failed.code, 1);
    assert!(failed.stdout.is_empty());
    assert!(
        failed.stderr.contains("dream failed (exit 1); details in"),
        "{}",
        failed.stderr
    );
    assert!(log(&w).contains("dreamer_unavailable"));
}
