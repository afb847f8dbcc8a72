//! The example capabilities written in Python and JavaScript
//! (`examples/python-word-count`, `examples/js-word-count`), built with
//! their own build scripts and toolchains (componentize-py, componentize-js,
//! installed by `scripts/setup.sh --tests`). A build is kept under
//! `target/test-components/`, named by a hash of everything it is made from,
//! so the suites build each once; concurrent test processes wait for the
//! first one's build instead of repeating it.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::host::target_dir;

/// An example written in another language.
#[derive(Debug, Clone, Copy)]
pub enum Example {
    Python,
    JavaScript,
}

impl Example {
    fn folder(self) -> &'static str {
        match self {
            Example::Python => "python-word-count",
            Example::JavaScript => "js-word-count",
        }
    }

    /// The capability id the example describes.
    pub fn id(self) -> &'static str {
        match self {
            Example::Python => "example.word-count-py",
            Example::JavaScript => "example.word-count-js",
        }
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Hashes the files of `dirs` (names and contents, in order) into `hasher`.
fn hash_files(hasher: &mut Sha256, dirs: &[PathBuf]) {
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "wasm"))
            .collect();
        files.sort();
        for file in files {
            hasher.update(file.file_name().unwrap().as_encoded_bytes());
            hasher.update(std::fs::read(&file).unwrap());
        }
    }
}

/// The example built against `world` (a world of `wit/capability`), built
/// now unless a build of the same sources is kept. `world` is passed to the
/// build script as `CAPSTAN_WORLD`.
pub fn build(example: Example, world: &str) -> PathBuf {
    let root = workspace();
    let source = root.join("examples").join(example.folder());
    let mut hasher = Sha256::new();
    hasher.update(world.as_bytes());
    hash_files(&mut hasher, &[source.clone(), root.join("wit/host"), root.join("wit/capability")]);
    // The toolchains' versions are pinned there: a new version builds anew.
    hasher.update(std::fs::read(root.join("scripts/setup.sh")).unwrap());
    let key = hex::encode(&hasher.finalize()[..8]);
    let dir = target_dir().join("test-components");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{}-{world}-{key}.wasm", example.folder()));
    // One build at a time per output: the others wait on the lock and find
    // the file made.
    let lock = std::fs::File::create(out.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    if out.exists() {
        return out;
    }
    let partial = out.with_extension("partial");
    let result = Command::new(source.join("build.sh")).arg(&partial).env("CAPSTAN_WORLD", world).output().unwrap();
    assert!(
        result.status.success(),
        "building {} failed (run scripts/setup.sh --tests to install its toolchain):\n{}{}",
        example.folder(),
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::rename(&partial, &out).unwrap();
    out
}
