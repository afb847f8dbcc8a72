//! Builds the crates in `capabilities/` for wasm32-wasip2, pre-initialises
//! and compiles each for this build's engine (`build/precompile.rs`), and
//! embeds both as the built-in capabilities (`$OUT_DIR/builtins.rs`).

#[path = "build/guests.rs"]
mod guests;
#[path = "build/precompile.rs"]
mod precompile;

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
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let precompiler = precompile::Precompiler::new();
    let mut code = format!(
        "/// The compatibility fingerprint of the engine the built-ins were compiled with.\n\
         pub const PRECOMPILED_FOR: u64 = {};\n\
         /// Built-in capability components: (crate name, component bytes, the\n\
         /// pre-initialised snapshot compiled for [`PRECOMPILED_FOR`]).\n\
         pub static BUILTINS: &[(&str, &[u8], &[u8])] = &[\n",
        precompiler.compatibility()
    );
    for (guest, path) in crates.iter().zip(&built) {
        let compiled = precompiler.precompile(&guest.package, path, &out);
        code.push_str(&format!(
            "    ({:?}, include_bytes!({:?}), include_bytes!({:?})),\n",
            guest.package,
            path.display().to_string(),
            compiled.display().to_string()
        ));
    }
    code.push_str("];\n");
    std::fs::write(out.join("builtins.rs"), code).unwrap();
}
