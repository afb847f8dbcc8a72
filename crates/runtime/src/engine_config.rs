//! The wasmtime configuration every engine of this build is made with. The
//! build script includes this file too (through `#[path]`) to compile the
//! built-in components ahead with exactly the same settings, so it uses
//! nothing but wasmtime and std.

use std::hash::{Hash, Hasher};

use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Concurrent calls the instance pool is sized for.
const POOL_INSTANCES: u32 = 128;

/// Linear memory a warm pool slot keeps resident between calls.
const KEEP_RESIDENT_BYTES: usize = 64 << 20;

/// The engine configuration, without the on-disk cache. `max_memory_bytes`
/// is the largest memory cap any capability may get; it sizes the pool and
/// does not change compiled code.
pub fn config(max_memory_bytes: u64) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.consume_fuel(true);
    // Map each component's initial memory (its data segments, or its
    // pre-initialised snapshot) copy-on-write into the pool slot. With the
    // page-map scan below, a slot reused for the same component keeps the
    // pages a call only read, and only the pages it wrote are copied back
    // from the image, so a call neither copies the whole image nor faults
    // its way through it (see docs/benchmarks.md).
    config.memory_init_cow(true);

    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        .total_core_instances(POOL_INSTANCES * 8)
        .total_memories(POOL_INSTANCES * 2)
        .total_tables(POOL_INSTANCES * 4)
        .total_stacks(POOL_INSTANCES)
        .max_core_instances_per_component(32)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .max_memory_size(max_memory_bytes as usize)
        // Keep a slot's pages resident between calls and reset only the
        // dirty ones from the component's (pre-initialised) image, found by
        // scanning the page map; otherwise every call page-faults its way
        // back through the snapshot.
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(1 << 20)
        .async_stack_keep_resident(2 << 20)
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// A fingerprint of everything that decides whether code compiled by one
/// engine runs in another (wasmtime's version, the target and its CPU
/// features, the compiler settings). Code compiled ahead is used only by an
/// engine with the same fingerprint; wasmtime checks again when loading it.
pub fn compatibility(engine: &wasmtime::Engine) -> u64 {
    // The same toolchain builds the build script and the binary, so the
    // standard hasher gives both the same figure.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}
