//! Raw bindings generated from `wit/` for the `capability-component` world.
//! Most authors use [`crate::host`] and [`crate::export_capability!`]
//! instead; these stay public for anything the helpers do not cover.

wit_bindgen::generate!({
    path: ["../wit/host", "../wit/capability"],
    world: "capstan:capability/capability-component",
    pub_export_macro: true,
    export_macro_name: "__export_bindings",
    default_bindings_module: "capstan_sdk::bindings",
    generate_all,
});
