//! The one way into a host import. Every function of every `capstan:host`
//! interface is one [`host_call!`] on its family's view (`views.rs`): it
//! checks the interface's class (from the effect table,
//! `runtime/effects.rs`) against the call's grant,
//! records a refusal as a denial, runs the import only when its class is
//! open, and records the call — arguments and answer — when the grant asks
//! for a record. Nothing else calls the class check, so an import cannot
//! skip it or make it twice; `boundary_tests` checks that each import is
//! one `host_call!`.

use crate::bindings::capstan::host::types::HostError;
use crate::call_state::CallCore;
use crate::effects::interface_class;

/// Runs function `function` of host interface `import` on `view` (an
/// identifier: the import's `self`): the class check, then `body` with
/// `call` bound to the view when the class is open, then the record.
/// `recorded` is the arguments as [`CallCore::args`] gave them (taken
/// before `body` may move them); `shown` says a success in the record.
///
/// A macro rather than a function taking an async closure: the body runs
/// inline in the import's own future, which the bindings require to be
/// `Send`, and that check cannot see through a closure generic over a
/// view that borrows the call.
macro_rules! host_call {
    ($view:ident, $import:expr, $function:expr, $recorded:expr, $shown:expr, |$call:ident| $body:expr $(,)?) => {{
        let import: &'static str = $import;
        let result = match $crate::host::boundary::class_open($crate::host::views::HostView::core($view), import) {
            Ok(()) => {
                let $call = &mut *$view;
                async { $body }.await
            }
            Err(denied) => Err(denied),
        };
        $crate::host::views::HostView::core($view).record(import, $function, $recorded, &result, $shown);
        result
    }};
}
pub(crate) use host_call;

/// Refuses host interface `import` unless this call's grant opens its
/// class. A refusal is logged as a structured event and kept in the call
/// report. Called by [`host_call!`] alone.
pub(crate) fn class_open(core: &mut CallCore, import: &str) -> Result<(), HostError> {
    let class = interface_class(import);
    if core.grant.allows(class) {
        return Ok(());
    }
    let reason = format!("{import} needs the {class} class but this call is granted only {}", core.grant.max_class);
    core.deny(import, class, reason.clone());
    Err(HostError::Denied(reason))
}

#[cfg(test)]
mod boundary_tests {
    //! What the compiler cannot see: that each import's body is one
    //! `host_call`.

    use std::path::Path;

    /// The `async fn`s of every `impl … Host for …` block under
    /// `runtime/host`, with their bodies.
    fn imports() -> Vec<(String, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/host");
        let mut found = Vec::new();
        let mut files = vec![root];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for block in text.split("\nimpl ").skip(1) {
                let (head, rest) = block.split_once('{').unwrap_or((block, ""));
                if !head.contains("Host for ") {
                    continue;
                }
                // The block ends at the first `}` at the start of a line.
                let body = rest.split("\n}").next().unwrap_or("");
                for function in body.split("\n    async fn ").skip(1) {
                    let name = function.split('(').next().unwrap_or("").to_string();
                    let text = function.split("\n    }").next().unwrap_or("").to_string();
                    found.push((format!("{}: {name}", path.display()), text));
                }
            }
        }
        found
    }

    #[test]
    fn every_import_is_one_host_call() {
        let imports = imports();
        assert!(imports.len() >= 20, "found only {} imports: the scan is broken", imports.len());
        for (name, body) in imports {
            let through = body.matches("host_call!(").count() + body.matches("send_recorded(").count();
            assert_eq!(through, 1, "{name} must go through host_call exactly once:\n{body}");
        }
    }
}
