//! Link settings for the `pi-context` executable on Linux with glibc: every tool call of an agent
//! starts a new process, so what the dynamic loader does before `main` is paid on every call
//! (figures and the security trade-off: docs/architecture.md, "Process start-up").
//!
//! - `-no-pie`: a position-dependent executable needs none of the ≈ 19,000 relative relocations
//!   a PIE gets (each touched page of `.data.rel.ro` is a copy-on-write fault at start-up). The
//!   code itself is still compiled position-independent, so nothing else changes.
//! - The unwinder linked statically (`libgcc_eh.a`) instead of `libgcc_s.so.1`: one shared
//!   library fewer to map and relocate, and no run of libgcc_s's start-up CPU probe (`cpuid`
//!   traps to the hypervisor in a VM). rustc asks for `-lgcc_s`; a linker script of that name,
//!   found first on the bins' search path, hands the linker `libgcc_eh.a` instead — what rustc
//!   itself links with `+crt-static`.
//!
//! - The functions the frequent commands run placed side by side (`link/hot-symbols.txt`,
//!   written by `scripts/gen-hot-symbols`, given to lld as `--symbol-ordering-file`): a start
//!   then maps a few hundred KiB of code instead of touching pages all over ≈ 9 MB. Only when
//!   the linker is rustc's default lld (Rust ≥ 1.90 on x86_64 Linux, no linker configured):
//!   GNU ld does not know the option. Names the binary no longer has are skipped silently.
//!
//! Only the bins get these (`rustc-link-arg-bins`): tests, examples and other targets link as
//! rustc does by default. Other targets (macOS, musl, Windows) are left untouched. Set
//! `PI_CONTEXT_DEFAULT_LINK=1` to build with rustc's default link settings (PIE, libgcc_s).

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PI_CONTEXT_DEFAULT_LINK");
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os != "linux" || target_env != "gnu" {
        return;
    }
    if env::var_os("PI_CONTEXT_DEFAULT_LINK").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    let Some(out_dir) = env::var_os("OUT_DIR") else {
        return;
    };
    let dir = PathBuf::from(out_dir).join("link");
    if fs::create_dir_all(&dir).is_err() {
        return; // link as rustc does by default rather than fail the build
    }
    order_hot_symbols(&dir);
    let script = dir.join("libgcc_s.so");
    if fs::write(&script, "INPUT(-lgcc_eh)\n").is_err() {
        return; // keep the shared unwinder rather than fail the build
    }
    println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
}

/// Hand `link/hot-symbols.txt` to the linker when it is rustc's default lld.
///
/// The linker gets a copy inside `out_dir`, not the checkout's own file: cargo gives the same
/// `OUT_DIR` to every checkout of this package that shares a target directory (its hash does not
/// include the checkout's path), and a build script left unrerun would otherwise hand the linker
/// another checkout's path, which fails the link once that checkout is gone.
fn order_hot_symbols(out_dir: &std::path::Path) {
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let Some(manifest) = env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let list = PathBuf::from(manifest).join("link").join("hot-symbols.txt");
    if !list.is_file() || !default_linker_is_lld() {
        return;
    }
    let copy = out_dir.join("hot-symbols.txt");
    if fs::copy(&list, &copy).is_err() {
        return; // an unordered binary is as correct, only slower to start
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        copy.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// Whether the bins link with lld: rustc 1.90 and later link x86_64-unknown-linux-gnu with its
/// own lld unless a linker or linker flavour is configured.
fn default_linker_is_lld() -> bool {
    if env::var("TARGET").ok().as_deref() != Some("x86_64-unknown-linux-gnu") {
        return false;
    }
    if env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(release) = text.lines().find_map(|l| l.strip_prefix("release: ")) else {
        return false;
    };
    let mut parts = release
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
