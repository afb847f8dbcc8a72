//! Turns component bytes into a [`Loaded`] capability or a one-line reason
//! for refusing them: checks the file is a component, compiles it (through
//! the engine's cache), checks its imports against the effect table, links
//! it, finds the capability exports, calls `describe`, validates the
//! descriptor, checks the label against the imports actually present, and
//! holds the schemas to their caps and compiles the input schema.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, InstancePre, Linker};

use super::bindings::exports::capstan::capability::{capability, verifier};
use super::call_state::{CallState, CallTarget};
use super::descriptor::Descriptor;
use super::effects::{self, EffectClass, ImportSummary};
use super::grant::{Actor, Grant};
use super::host::HostServices;
use super::input_validator::InputValidator;
use super::{invoke, preinit};
use capstan_config::CallLimits;

/// Where a component came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "kebab-case")]
pub enum Source {
    /// Embedded in the binary (crate name).
    BuiltIn(String),
    /// A file in the capabilities directory.
    Directory(PathBuf),
    /// The copy the host kept of the last accepted version of a plugin,
    /// serving while a replacement waits for the operator.
    Retained(PathBuf),
    /// A tool of the external MCP server of this name.
    External(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn(name) => write!(f, "built-in {name}"),
            Source::Directory(path) => write!(f, "{}", path.display()),
            Source::Retained(path) => write!(f, "retained copy {}", path.display()),
            Source::External(server) => write!(f, "MCP server {server}"),
        }
    }
}

/// A capability ready to be called.
pub struct Loaded {
    pub descriptor: Descriptor,
    /// SHA-256 of the component bytes, hex (of an external tool: of what
    /// its server said about it).
    pub digest: String,
    pub source: Source,
    pub imports: ImportSummary,
    pub has_verifier: bool,
    /// The input schema, vetted and compiled at load.
    pub input_validator: Arc<InputValidator>,
    pub(crate) code: Code,
}

/// What runs when a capability is called.
pub(crate) enum Code {
    /// A component, instantiated afresh for every call.
    Component(ComponentCode),
    /// A tool on an external server, called by the host.
    External(Arc<dyn super::external::ExternalTool>),
}

pub(crate) struct ComponentCode {
    pub(crate) pre: InstancePre<CallState>,
    pub(crate) exports: capability::GuestIndices,
    pub(crate) verifier: Option<verifier::GuestIndices>,
    pub(crate) target: Arc<CallTarget>,
}

/// Why bytes were not loaded, in one line, and whether trying them again
/// later may go otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Something about the bytes themselves: the same bytes are refused
    /// again, so they are not compiled again.
    Refused(String),
    /// `describe` or pre-initialisation ran out of its time or its
    /// instruction bound, which a busy machine can cause: tried again
    /// later.
    OutOfTime(String),
}

impl LoadError {
    /// Whether the refusal depends on the moment rather than on the bytes.
    pub(crate) fn is_momentary(&self) -> bool {
        matches!(self, LoadError::OutOfTime(_))
    }

    /// The reason, as the operator reads it.
    pub fn reason(&self) -> &str {
        match self {
            LoadError::Refused(reason) | LoadError::OutOfTime(reason) => reason,
        }
    }

    /// The same refusal, its reason led by `what`.
    fn led_by(self, what: impl std::fmt::Display) -> LoadError {
        match self {
            LoadError::Refused(reason) => LoadError::Refused(format!("{what}{reason}")),
            LoadError::OutOfTime(reason) => LoadError::OutOfTime(format!("{what}{reason}")),
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason())
    }
}

impl From<String> for LoadError {
    fn from(reason: String) -> LoadError {
        LoadError::Refused(reason)
    }
}

impl From<&str> for LoadError {
    fn from(reason: &str) -> LoadError {
        LoadError::Refused(reason.to_string())
    }
}

/// SHA-256 of `bytes` as hex.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The 8-byte preamble of a component (magic, then layer 1, version 0x0d).
const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

fn first_line(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    text.lines().next().unwrap_or("").to_string()
}

/// Compiles off the async threads: a large component takes long enough to
/// compile that doing it in place would stall everything sharing the thread.
/// The work of compiling its functions runs on the compiler's pool at a
/// low CPU priority (see [`compiling`](super::compiling)), so the calls
/// served meanwhile do not wait for it; reading code back from the cache
/// runs here at the usual priority, so a busy machine does not starve it.
pub(crate) async fn compile(engine: &Engine, bytes: Vec<u8>) -> wasmtime::Result<Component> {
    super::compiling::lower_compile_priority();
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || Component::new(&engine, &bytes))
        .await
        .unwrap_or_else(|e| Err(wasmtime::Error::msg(format!("compilation failed: {e}"))))
}

/// CallLimits for `describe`: it must be cheap and pure.
const DESCRIBE_LIMITS: CallLimits =
    CallLimits { deadline_ms: 5_000, fuel: 2_000_000_000, memory_bytes: 64 << 20, output_bytes: 1 << 20 };

/// Loads `bytes` or says in one line why not.
pub async fn load(
    engine: &Engine,
    linker: &Linker<CallState>,
    services: &Arc<HostServices>,
    bytes: &[u8],
    source: Source,
    cache_dir: &Path,
) -> Result<Loaded, LoadError> {
    if bytes.len() < 8 || bytes[..4] != COMPONENT_PREAMBLE[..4] {
        return Err("not a WebAssembly file".into());
    }
    if bytes[4..8] != COMPONENT_PREAMBLE[4..8] {
        return Err("a core WebAssembly module, not a component: build a component (Rust: \
                    --target wasm32-wasip2; Python: componentize-py; JavaScript: componentize-js \
                    or jco componentize)"
            .into());
    }
    let digest = digest(bytes);
    let mut component =
        compile(engine, bytes.to_vec()).await.map_err(|e| format!("not a valid component: {}", first_line(&e)))?;
    // Unknown imports are refused before anything runs, so the reason is
    // ours and clear.
    import_names(engine, &component)?;

    if preinit::wanted(&component) {
        let snap = preinit::snapshot(engine, linker, services, bytes, &digest, cache_dir, DESCRIBE_LIMITS).await?;
        component = compile(engine, snap)
            .await
            .map_err(|e| format!("pre-initialised component is not valid: {}", first_line(&e)))?;
    }
    link_and_describe(engine, linker, services, component, digest, source).await
}

/// Loads a built-in component from the code the build compiled ahead for
/// this engine when the engine can use it, otherwise like any component.
pub(crate) async fn load_builtin(
    engine: &Engine,
    linker: &Linker<CallState>,
    services: &Arc<HostServices>,
    (name, bytes, precompiled): (&str, &[u8], &'static [u8]),
    use_precompiled: bool,
    cache_dir: &Path,
) -> Result<Loaded, LoadError> {
    let source = Source::BuiltIn(name.to_string());
    if use_precompiled {
        match deserialize_builtin(engine, precompiled) {
            Ok(component) => {
                return link_and_describe(engine, linker, services, component, digest(bytes), source).await;
            }
            Err(e) => tracing::warn!(
                component = name,
                error = %first_line(&e),
                "the code compiled with this build for a built-in was refused; compiling it"
            ),
        }
    }
    load(engine, linker, services, bytes, source, cache_dir).await
}

/// Code compiled ahead for a built-in, as a component of `engine`.
#[allow(unsafe_code)]
fn deserialize_builtin(engine: &Engine, code: &'static [u8]) -> wasmtime::Result<Component> {
    // SAFETY: `code` is part of this binary: its build script produced it
    // with `Engine::precompile_component` of this wasmtime, with the engine
    // configuration this engine was made with (`engine_config`), and it is
    // never read from a file anyone could replace. wasmtime still checks its
    // header (version, configuration, target features) and refuses a
    // mismatch, which the caller answers by compiling.
    unsafe { Component::deserialize(engine, code) }
}

/// The names `component` imports, refused when one is not offered at all.
fn import_names(engine: &Engine, component: &Component) -> Result<Vec<String>, String> {
    let names: Vec<String> = component.component_type().imports(engine).map(|(name, _)| name.to_string()).collect();
    effects::check_imports(names.iter().map(String::as_str), EffectClass::Execute)?;
    Ok(names)
}

/// Links a compiled (and pre-initialised) component, finds its exports,
/// calls `describe` and checks the label against the imports.
async fn link_and_describe(
    engine: &Engine,
    linker: &Linker<CallState>,
    services: &Arc<HostServices>,
    component: Component,
    digest: String,
    source: Source,
) -> Result<Loaded, LoadError> {
    let names = import_names(engine, &component)?;
    let pre = linker
        .instantiate_pre(&component)
        .map_err(|e| format!("cannot be linked against the host: {}", first_line(&e)))?;
    let exports = capability::GuestIndices::new(&pre).map_err(|_| {
        "does not export capstan:capability/capability@0.1.0 (wrong world: build against one of \
         wit/capability's worlds, such as read-capability, or with capstan-sdk in Rust)"
            .to_string()
    })?;
    let verifier = verifier::GuestIndices::new(&pre).ok();

    let probe = Arc::new(CallTarget { id: "<loading>".into(), services: Vec::new() });
    let grant = Grant::new(Actor::Cli, EffectClass::Read);
    let raw = invoke::describe(engine, &pre, &exports, grant, probe, services.clone(), DESCRIBE_LIMITS)
        .await
        .map_err(|e| e.led_by("describe failed: "))?;
    let descriptor = Descriptor::from_wit(raw).map_err(|e| format!("bad descriptor: {e}"))?;
    let imports = effects::check_imports(names.iter().map(String::as_str), descriptor.label)
        .map_err(|e| format!("{}: {e}", descriptor.id))?;
    let input_validator =
        compile_schemas(&descriptor).await.map_err(|e| format!("bad descriptor: {}: {e}", descriptor.id))?;

    let target = Arc::new(CallTarget { id: descriptor.id.clone(), services: descriptor.services.clone() });
    Ok(Loaded {
        has_verifier: verifier.is_some(),
        descriptor,
        digest,
        source,
        imports,
        input_validator,
        code: Code::Component(ComponentCode { pre, exports, verifier, target }),
    })
}

/// Holds the schemas to their caps (`schema_caps`) and compiles the input
/// schema, on a blocking thread: a schema at its caps takes milliseconds to
/// vet and compile, which an async thread must not spend. The output
/// schema is only kept and listed, so its shape is what is capped.
pub(super) async fn compile_schemas(descriptor: &Descriptor) -> Result<Arc<InputValidator>, String> {
    let (input, output) = (descriptor.input_schema.clone(), descriptor.output_schema.clone());
    tokio::task::spawn_blocking(move || {
        let validator = InputValidator::build(&input).map_err(|e| format!("the input schema {e}"))?;
        super::schema_caps::vet_shape(&output).map_err(|e| format!("the output schema {e}"))?;
        Ok(Arc::new(validator))
    })
    .await
    .unwrap_or_else(|e| Err(format!("checking its schemas failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::LoadError;

    #[test]
    fn whether_a_refusal_is_tried_again_is_its_kind_not_its_words() {
        // Refused for the schema: the same bytes fail the same way, however
        // the reason is worded.
        let schema = LoadError::from(
            "bad descriptor: x: the input schema refers to \"https://a.example/s\", outside the schema: only \
             references within it (#/…) are followed"
                .to_string(),
        );
        assert!(!schema.is_momentary());
        // Out of time: tried again later, and stays so when the reason is
        // led by what ran out.
        let late = LoadError::OutOfTime("the call ran past its deadline".into()).led_by("describe failed: ");
        assert!(late.is_momentary());
        assert_eq!(late.reason(), "describe failed: the call ran past its deadline");
    }
}
