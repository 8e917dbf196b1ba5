//! The floor under a cold history call, for `scripts/bench-history`: how long validating every
//! line of a session file as JSON takes with serde_json alone (deserialised into `IgnoredAny`:
//! the whole grammar checked, no value built), the file already in memory — on one thread, and
//! split by bytes over THREADS threads (default 2). A cold call must at least judge every line
//! (a malformed one is skipped and counted, and changes the seqs after it), and then still
//! read the file, extract the entries, build the projection and write the index.
//!
//! `json_floor FILE [THREADS] [RUNS]` prints `lines <n> valid <n> one <ms> all <ms>`: the
//! fastest of RUNS (default 5) runs each — a floor is the least the work takes; a slower run
//! met something else on the machine.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: json_floor FILE [THREADS] [RUNS]");
        std::process::exit(2);
    };
    let number = |arg: Option<String>, default: usize| {
        arg.map_or(default, |a| {
            a.parse().expect("THREADS and RUNS are numbers")
        })
        .max(1)
    };
    let threads = number(args.next(), 2);
    let runs = number(args.next(), 5);
    let data = std::fs::read(&path).expect("FILE is readable");
    // Blank lines are skipped, not judged, as the history commands do.
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    let parts = split_by_bytes(&lines, threads);
    let valid_in = |part: &[&[u8]]| {
        part.iter()
            .filter(|line| serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok())
            .count()
    };
    let (mut one, mut all, mut valid) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let start = Instant::now();
        valid = valid_in(&lines);
        one.push(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        let in_parts: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .iter()
                .map(|part| scope.spawn(move || valid_in(part)))
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("a validating thread does not panic"))
                .sum()
        });
        all.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(in_parts, valid, "the parts hold every line once");
    }
    println!(
        "lines {} valid {valid} one {:.1} all {:.1}",
        lines.len(),
        fastest(&one),
        fastest(&all)
    );
}

/// `lines` cut into `parts` runs of consecutive lines of about equal bytes (a session's lines
/// are not equally long everywhere).
fn split_by_bytes<'a>(lines: &'a [&'a [u8]], parts: usize) -> Vec<&'a [&'a [u8]]> {
    let total: usize = lines.iter().map(|line| line.len()).sum();
    let share = total.div_ceil(parts);
    let mut out = Vec::with_capacity(parts);
    let (mut from, mut bytes) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        bytes += line.len();
        if bytes >= share && out.len() + 1 < parts {
            out.push(&lines[from..=i]);
            (from, bytes) = (i + 1, 0);
        }
    }
    out.push(&lines[from..]);
    out
}

fn fastest(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}
