//! Builds the crates in `capabilities/` for wasm32-wasip2 and embeds them as
//! the built-in capabilities (`$OUT_DIR/builtins.rs`).

#[path = "build/guests.rs"]
mod guests;

use std::path::PathBuf;

fn main() {
    // The migrations are embedded by `sqlx::migrate!`; a new file must
    // rebuild the crate even when no Rust source changed.
    println!("cargo:rerun-if-changed=../migrations");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest.parent().unwrap().to_path_buf();
    let folder = workspace.join("capabilities");
    // Libraries the capabilities link (not components themselves).
    let libs = workspace.join("guest-libs");
    guests::rerun_if_changed(&workspace, &[&folder, &libs]);

    let crates = guests::guests_in(&folder);
    let built = guests::build(&workspace, &crates, &guests::guest_target_dir(&workspace));
    let mut code = String::from(
        "/// Built-in capability components: (crate name, component bytes).\n\
         pub static BUILTINS: &[(&str, &[u8])] = &[\n",
    );
    for (guest, path) in crates.iter().zip(&built) {
        code.push_str(&format!("    ({:?}, include_bytes!({:?})),\n", guest.package, path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("builtins.rs");
    std::fs::write(out, code).unwrap();
}
