//! deploy/kubernetes/: the manifests validate against the Kubernetes schemas, offline, with the
//! PyPI package `kubernetes-validate` (installed by `tools/setup`); the Dockerfile is multi-stage
//! with a small runtime image.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

fn validate(files: &[std::path::PathBuf]) -> CommandOutput {
    let mut c = Command::new("kubernetes-validate");
    c.args(["--strict", "--no-warn"]).args(files);
    run_command(c, Duration::from_secs(120))
}

fn manifests() -> Vec<std::path::PathBuf> {
    let dir = workspace_root().join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas() {
    assert!(
        Command::new("kubernetes-validate")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "kubernetes-validate is missing: run tools/setup clients"
    );
    let files = manifests();
    assert!(files.len() >= 4, "{files:?}");
    let out = validate(&files);
    assert!(out.success(), "{}\n{}", out.stdout, out.stderr);
    let job = std::fs::read_to_string(workspace_root().join("deploy/kubernetes/replay-job.yaml"))
        .unwrap();
    for needed in [
        "completionMode: Indexed",
        "parallelism:",
        "secretKeyRef:",
        "--shards",
        "--start-at",
        "shard-$JOB_COMPLETION_INDEX.json",
    ] {
        assert!(job.contains(needed), "replay-job.yaml lacks {needed}");
    }

    // The check is real: a broken Job is refused.
    let dir = tempdir();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        job.replace("completionMode: Indexed", "completionMode: 7"),
    )
    .unwrap();
    assert!(!validate(&[broken]).success());
}

#[test]
fn the_image_is_built_in_two_stages_onto_a_slim_runtime() {
    let text =
        std::fs::read_to_string(workspace_root().join("deploy/kubernetes/Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].contains(" AS build"));
    assert!(froms[1].contains("slim"), "{froms:?}");
    assert!(text.contains("COPY --from=build"));
    assert!(text.contains("USER 10001"));
}
