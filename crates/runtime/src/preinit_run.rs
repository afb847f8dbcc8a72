//! Running a component's `capstan-preinit` export and snapshotting the
//! memory it leaves into a new component (wasmtime's wizer), for a store of
//! any kind. The host's load path (`preinit`) runs it against the host's
//! imports; the build script runs it to pre-initialise the built-in
//! components ahead (it includes this file through `#[path]`, so it uses
//! nothing but wasmtime and std).

use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, WasmList};
use wasmtime_wizer::{ComponentContext, ComponentInstanceState, Wizer};

/// The optional export that asks for pre-initialisation.
pub(crate) const PREINIT_EXPORT: &str = "capstan-preinit";

/// A component instrumented for pre-initialisation: compile
/// [`Instrumented::bytes`], then [`Instrumented::run_and_snapshot`].
pub(crate) struct Instrumented<'a> {
    wizer: Wizer,
    context: ComponentContext<'a>,
    /// The instrumented component, to compile and instantiate (taken by
    /// the caller; the snapshot needs only the rest).
    pub bytes: Vec<u8>,
}

/// Instruments `bytes` for pre-initialisation.
pub fn instrument(bytes: &[u8]) -> Result<Instrumented<'_>, String> {
    let mut wizer = Wizer::new();
    // Keep the export: removing it leaves the component's lifted function
    // pointing at a core export that no longer exists. The host never calls
    // it again, so keeping it costs nothing.
    wizer.init_func(PREINIT_EXPORT).keep_init_func(true);
    let (context, instrumented) =
        wizer.instrument_component(bytes).map_err(|e| format!("cannot pre-initialise: {}", first_line(e)))?;
    Ok(Instrumented { wizer, context, bytes: instrumented })
}

impl Instrumented<'_> {
    /// Instantiates the compiled instrumented component in `store`, runs
    /// its pre-initialisation and returns the snapshot component's bytes.
    pub async fn run_and_snapshot<T: Send + 'static>(
        &self,
        pre: &InstancePre<T>,
        store: &mut Store<T>,
    ) -> Result<Vec<u8>, String> {
        let instance = pre
            .instantiate_async(&mut *store)
            .await
            .map_err(|e| format!("pre-initialisation failed: {}", first_line(e)))?;
        let init = instance
            .get_typed_func::<(), ()>(&mut *store, PREINIT_EXPORT)
            .map_err(|e| format!("{PREINIT_EXPORT} has the wrong type: {}", first_line(e)))?;
        init.call_async(&mut *store, ()).await.map_err(|e| format!("{PREINIT_EXPORT} trapped: {}", first_line(e)))?;
        let mut access = Access { store, instance, error: None };
        let snap = self
            .wizer
            .snapshot_component(&self.context, &mut access)
            .await
            .map_err(|e| format!("cannot snapshot the pre-initialised state: {}", first_line(e)))?;
        if let Some(e) = access.error {
            return Err(format!("cannot snapshot the pre-initialised state: {e}"));
        }
        Ok(snap)
    }
}

/// Reads state out of the instrumented instance for the snapshot. The
/// trait's methods cannot fail, so the first error is kept and checked after.
struct Access<'a, T: 'static> {
    store: &'a mut Store<T>,
    instance: Instance,
    error: Option<String>,
}

impl<T: Send + 'static> Access<'_, T> {
    async fn call<R>(&mut self, interface: &str, func: &str) -> Option<R>
    where
        R: wasmtime::component::Lift + Send + Sync + 'static,
    {
        let result = async {
            let parent = self
                .instance
                .get_export_index(&mut *self.store, None, interface)
                .ok_or_else(|| format!("instrumented component lacks {interface}"))?;
            let index = self
                .instance
                .get_export_index(&mut *self.store, Some(&parent), func)
                .ok_or_else(|| format!("instrumented component lacks {interface}#{func}"))?;
            let typed = self
                .instance
                .get_typed_func::<(), (R,)>(&mut *self.store, index)
                .map_err(|e| format!("{interface}#{func}: {e}"))?;
            let (value,) =
                typed.call_async(&mut *self.store, ()).await.map_err(|e| format!("{interface}#{func}: {e}"))?;
            Ok::<R, String>(value)
        }
        .await;
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

impl<T: Send + 'static> ComponentInstanceState for Access<'_, T> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        match self.call::<WasmList<u8>>(instance, func).await {
            Some(list) => contents(list.as_le_slice(&*self.store)),
            None => contents(&[]),
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call::<i32>(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call::<i64>(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func).await.map_or(0, f32::to_bits)
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func).await.map_or(0, f64::to_bits)
    }
}

/// The first line of an error, for one-line load reasons.
pub fn first_line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}
