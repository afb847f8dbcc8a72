//! Builds the test components in `tests/components/` and the example plugin
//! in `examples/` for wasm32-wasip2, and records their paths for the suites
//! (`$OUT_DIR/test_components.rs`).

#[path = "../crates/builtins/build/guests.rs"]
mod guests;

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest.parent().unwrap().to_path_buf();
    let components = manifest.join("components");
    let examples = workspace.join("examples");
    guests::rerun_if_changed(&workspace, &[&components, &examples]);

    let mut crates = guests::guests_in(&components);
    crates.extend(guests::guests_in(&examples));
    let built = guests::build(&workspace, &crates, &guests::guest_target_dir(&workspace));
    let mut code = String::new();
    for (guest, path) in crates.iter().zip(&built) {
        let name = guest.package.trim_start_matches("test-").trim_start_matches("capstan-example-");
        let constant = name.to_uppercase().replace('-', "_");
        code.push_str(&format!(
            "/// Built component of crate `{}`.\npub const {constant}: &str = {:?};\n",
            guest.package,
            path.display().to_string()
        ));
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("test_components.rs");
    std::fs::write(out, code).unwrap();
}
