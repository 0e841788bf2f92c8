//! The fuzz targets' committed seeds, for the stable tests that replay
//! them on every `cargo test`.

use std::path::Path;

/// The committed seed files (`seed-*`) of `fuzz/corpus/<target>/`, in name
/// order; the rest of that folder is what local fuzzing runs grew (not
/// committed). Panics when the folder is missing or holds no seed: a
/// replay of nothing would pass without checking anything.
///
/// # Examples
///
/// ```
/// for input in wheel_testkit::seed_corpus("wheel_ops") {
///     assert!(!input.is_empty());
/// }
/// ```
pub fn seed_corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {} missing: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "seed corpus {} is empty", dir.display());
    files
        .iter()
        .map(|p| std::fs::read(p).expect("read corpus file"))
        .collect()
}
