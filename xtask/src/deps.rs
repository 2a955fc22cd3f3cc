//! The dependency check: a library crate's normal dependencies must be on
//! the list kept here, so that a crate picked alone pulls only what its job
//! needs. Adding a dependency means adding it here too, in the same commit,
//! where a reviewer sees it.

use crate::metadata::{DepKind, Package};

/// The normal (`[dependencies]`) entries each library crate may have,
/// optional ones included, by package name (`replmem-<folder>` for the
/// workspace's own). Dev- and build-dependencies are not checked.
pub(crate) const ALLOWED_DEPENDENCIES: &[(&str, &[&str])] = &[
    // The facade: parking_lot normally, loom under cfg(loom).
    ("replmem-sync", &["parking_lot", "loom"]),
    // The file layer: direct I/O and write-back through writeback, the
    // lock and free space through fs4.
    (
        "replmem-fs",
        &["replmem-sync", "thiserror", "fs4", "replmem-writeback"],
    ),
    // Tests' and benches' support (not published): the facade's std atomics.
    ("test-support", &["replmem-sync"]),
    ("replmem-logalloc", &["replmem-sync", "thiserror", "slab"]),
    (
        "replmem-region-group",
        &[
            "replmem-logalloc",
            "replmem-sync",
            "thiserror",
            "slab",
            "intrusive-collections",
        ],
    ),
    // proptest is optional, behind `proptest-strategies`.
    ("replmem-mutation", &["bytes", "thiserror", "proptest"]),
    (
        "replmem-memtable",
        &[
            "replmem-logalloc",
            "replmem-region-group",
            "replmem-mutation",
            "replmem-sync",
            "thiserror",
            "bytes",
        ],
    ),
    // The row cache: partitions in a logalloc region, an LRU in a slab;
    // bytes for the shared buffer a hit decodes from; the memtable's
    // hand-over, whose partitions it adopts by region merge at a flush.
    (
        "replmem-row-cache",
        &[
            "bytes",
            "replmem-memtable",
            "replmem-logalloc",
            "replmem-mutation",
            "replmem-sync",
            "thiserror",
            "slab",
        ],
    ),
    (
        "replmem-sstable",
        &[
            "replmem-mutation",
            "replmem-sync",
            "thiserror",
            "bytes",
            "crc32c",
            "lz4_flex",
            "replmem-writeback",
            "replmem-device",
            // Every file operation goes through the file layer.
            "replmem-fs",
        ],
    ),
    (
        "replmem-dirty-memory",
        &["replmem-region-group", "replmem-sync", "thiserror"],
    ),
    // The file layer: the flush directories' check.
    (
        "replmem-flush-scheduler",
        &["replmem-sync", "thiserror", "replmem-fs"],
    ),
    // sync_file_range (Linux only): no safe wrapper in rustix or nix.
    ("replmem-writeback", &["libc"]),
    ("replmem-device", &["replmem-sync", "thiserror"]),
    // The fair queue: the facade, and the device crate's clocks.
    (
        "replmem-io-scheduler",
        &["replmem-sync", "thiserror", "replmem-device"],
    ),
    (
        "replmem-commitlog",
        &[
            "replmem-mutation",
            "replmem-sync",
            "thiserror",
            "bytes",
            "crc32c",
            "replmem-writeback",
            "replmem-device",
            "replmem-fs",
        ],
    ),
    (
        "replmem-compaction",
        &[
            "replmem-mutation",
            "replmem-sstable",
            "replmem-device",
            "replmem-fs",
            "replmem-sync",
            "thiserror",
            "crc32c",
        ],
    ),
    (
        "replmem-replica",
        &[
            "replmem-logalloc",
            "replmem-region-group",
            "replmem-mutation",
            "replmem-memtable",
            // A row cache per table, in front of its sstables.
            "replmem-row-cache",
            "replmem-sstable",
            "replmem-dirty-memory",
            "replmem-flush-scheduler",
            "replmem-commitlog",
            "replmem-compaction",
            "replmem-device",
            "replmem-sync",
            "thiserror",
            "bytes",
            "crc32c",
            // Every file operation, the directory lock included.
            "replmem-fs",
        ],
    ),
    // The load generator: its own crate on the database's public API, so
    // the database pulls no command-line or reporting dependencies.
    (
        "replmem-replica-stress",
        &[
            "replmem-replica",
            "replmem-mutation",
            // `--direct-io`: the process's sstable scans.
            "replmem-sstable",
            "replmem-sync",
            "thiserror",
            "bytes",
            // The command line.
            "clap",
            // Latency histograms and their interval logs.
            "hdrhistogram",
            // The seeded workload.
            "rand",
            // The JSON reports.
            "serde_json",
            // A run's temporary data directory.
            "tempfile",
            // The data directories' free space (the disk guard).
            "fs4",
            // SIGINT/SIGTERM: a clean stop (summary, temporary directory removed).
            "signal-hook",
        ],
    ),
];

/// Checks every library crate of `packages` against `allowed`; binary-only
/// packages (xtask, sstable-tool) are not checked; a package with a
/// library and a program (replica-stress) is, as a library. Returns what was
/// checked, or every violation.
pub(crate) fn check(packages: &[Package], allowed: &[(&str, &[&str])]) -> Result<String, String> {
    let mut problems = Vec::new();
    let mut checked = 0;
    for package in packages.iter().filter(|p| p.is_library) {
        let Some((_, list)) = allowed.iter().find(|(name, _)| *name == package.name) else {
            problems.push(format!(
                "library crate `{}` has no entry in xtask's ALLOWED_DEPENDENCIES (xtask/src/deps.rs)",
                package.name
            ));
            continue;
        };
        checked += 1;
        for dep in package
            .dependencies
            .iter()
            .filter(|d| d.kind == DepKind::Normal)
        {
            if !list.contains(&dep.name.as_str()) {
                problems.push(format!(
                    "`{}` gained the normal dependency `{}`{}, which is not in its allowed list \
                     in xtask/src/deps.rs: make it a dev-dependency, put it behind a feature of \
                     another crate, or add it to the list in the same commit",
                    package.name,
                    dep.name,
                    if dep.optional { " (optional)" } else { "" },
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(format!(
            "({checked} library crates use only allowed dependencies)"
        ))
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{parse, tests::sample};

    const ALLOWED: &[(&str, &[&str])] = &[("lib", &["thiserror", "proptest"])];

    #[test]
    fn allowed_dependencies_pass_and_binaries_are_not_checked() {
        // `tool` depends on clap, but it is not a library.
        let packages = parse(&sample(None)).expect("valid");
        assert_eq!(
            check(&packages, ALLOWED),
            Ok("(1 library crates use only allowed dependencies)".to_string())
        );
    }

    #[test]
    fn a_library_gaining_a_normal_dependency_fails_the_check() {
        let packages = parse(&sample(Some("clap"))).expect("valid");
        let err = check(&packages, ALLOWED).unwrap_err();
        assert!(
            err.contains("`lib` gained the normal dependency `clap`"),
            "{err}"
        );
    }

    #[test]
    fn a_library_without_an_entry_fails_the_check() {
        let packages = parse(&sample(None)).expect("valid");
        let err = check(&packages, &[]).unwrap_err();
        assert!(err.contains("`lib` has no entry"), "{err}");
    }

    #[test]
    fn the_workspace_passes_its_own_check() {
        let packages = crate::metadata::workspace().expect("cargo metadata");
        check(&packages, ALLOWED_DEPENDENCIES)
            .expect("the workspace's crates are within their lists");
    }
}
