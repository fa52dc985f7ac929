//! Every input the fuzzers ever failed on (`fuzz/regressions/<target>/`), and every seed of the
//! checked-in corpora (`fuzz/corpus/<target>/`), run through the same checks as the fuzz targets:
//! the checks are `fuzz/src/checks/`, included here by path, so `cargo test` on stable replays a
//! crash exactly as libFuzzer found it. `docs/fuzzing.md` lists what was found.

#[path = "../fuzz/src/checks/mod.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn inputs(folder: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(folder)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("read the folder").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs each file of `folder` through its target's check; returns how many ran.
fn run_all(folder: &str) -> usize {
    let mut ran = 0;
    for (target, _) in checks::TARGETS {
        let check = checks::check(target).expect("listed");
        for path in inputs(folder, target) {
            let data = std::fs::read(&path).expect("read the input");
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{target}: {} fails", path.display());
            ran += 1;
        }
    }
    ran
}

#[test]
fn every_regression_input_passes_its_check() {
    run_all("regressions");
}

#[test]
fn every_corpus_seed_passes_its_check() {
    let ran = run_all("corpus");
    assert!(
        ran >= checks::TARGETS.len(),
        "the corpora are missing: {ran} seeds"
    );
}

#[test]
fn every_target_has_a_corpus() {
    for (target, _) in checks::TARGETS {
        assert!(
            !inputs("corpus", target).is_empty(),
            "fuzz/corpus/{target}/ is empty"
        );
    }
}
