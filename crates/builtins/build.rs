//! Builds the crates in `capabilities/` for wasm32-wasip2, pre-initialises
//! and compiles each for this build's engine (`build/precompile.rs`), and
//! embeds both as the built-in capabilities (`$OUT_DIR/builtins.rs`). This
//! runs beside the compile of the runtime and the crates above it: only
//! the `capstan` crate waits for it.

#[path = "build/guests.rs"]
mod guests;
#[path = "build/precompile.rs"]
mod precompile;

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest.ancestors().nth(2).unwrap().to_path_buf();
    let folder = workspace.join("capabilities");
    // Libraries the capabilities link (not components themselves).
    let libs = workspace.join("guest-libs");
    guests::rerun_if_changed(&workspace, &[&folder, &libs]);
    // The engine configuration the binary compiles with, shared with the
    // runtime: a change there compiles the built-ins again.
    for shared in ["engine_config.rs", "preinit_run.rs"] {
        println!("cargo:rerun-if-changed={}", workspace.join("crates/runtime/src").join(shared).display());
    }

    let crates = guests::guests_in(&folder);
    let built = guests::build(&workspace, &crates, &guests::guest_target_dir(&workspace));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // Code compiled here runs only on a machine like this one: a build for
    // another target compiles the built-ins at its first start instead.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    let precompiler = native.then(precompile::Precompiler::new);
    let mut code = format!(
        "/// The compatibility fingerprint of the engine the built-ins were compiled\n\
         /// with (none: a build for another machine compiled nothing ahead).\n\
         pub const PRECOMPILED_FOR: Option<u64> = {:?};\n\
         /// Built-in capability components: (crate name, component bytes, the\n\
         /// pre-initialised snapshot compiled for [`PRECOMPILED_FOR`]).\n\
         pub static BUILTINS: &[(&str, &[u8], &[u8])] = &[\n",
        precompiler.as_ref().map(precompile::Precompiler::compatibility)
    );
    for (guest, path) in crates.iter().zip(&built) {
        let compiled = match &precompiler {
            Some(precompiler) => {
                let compiled = precompiler.precompile(&guest.package, path, &out);
                format!("include_bytes!({:?})", compiled.display().to_string())
            }
            None => "&[]".to_string(),
        };
        code.push_str(&format!(
            "    ({:?}, include_bytes!({:?}), {compiled}),\n",
            guest.package,
            path.display().to_string(),
        ));
    }
    code.push_str("];\n");
    std::fs::write(out.join("builtins.rs"), code).unwrap();
}
