//! The one `bindgen!` of the host: Rust types and traits for the
//! `capability-component` world (host imports and capability exports).
//! Every host import is async because several block (HTTP, file copies);
//! exports are called with `call_async` on a store with async support.

wasmtime::component::bindgen!({
    path: ["../../wit/host", "../../wit/capability"],
    world: "capstan:capability/capability-component",
    imports: { default: async },
    exports: { default: async },
});
