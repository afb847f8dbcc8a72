//! Implementations of the `capstan:host` interfaces, one file each, and the
//! services they share (outbound clients, file roots, the domain store hook).
//! Each import is one `host_call!` (`boundary.rs`) on its family's view of
//! the call (`views.rs`): the class check against the call's grant, from
//! the effect table, and the call's record.
//!
//! A new interface touches, in order:
//! 1. `wit/host/<name>.wit`, its doc opening with `Effect class: <class>.`,
//!    and an `import` line in `wit/host/imports.wit`;
//! 2. a row in `HOST_INTERFACES` and a name in `effects::interface`, both
//!    in the contract crate (`guest-libs/contract/src/effects.rs`, which the
//!    SDK's mock host reads too); `runtime/effects.rs`'s tests tie both wit
//!    files to the table;
//! 3. a file here implementing the generated `Host` trait on its family's
//!    view, each function one `host_call!(self, interface::<NAME>, …)`, and
//!    its line in `views::add_to_linker` (with a view of its own only when
//!    it is a new family with parts of its own);
//! 4. the SDK (`guest-sdk/src/host.rs`): a typed helper, its wasm side
//!    (`host/wasm.rs`, calling the generated import) and its native side
//!    (`host/native.rs`, answered by the mock);
//! 5. what the SDK's mock host (`guest-sdk/src/testing.rs`) answers;
//! 6. `docs/authority.md` and `docs/architecture.md`, which list the
//!    interfaces by class.

mod boundary;
mod commands;
mod domain;
mod files;
mod holds;
mod invocation;
mod log;
mod outbound;
mod record;
mod views;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub use commands::{
    CommandAct, CommandEnd, CommandHost, CommandOutcome, CommandRecord, CommandRecorder, OUTPUT_ROOT, OutputOpened,
    OutputState, OutputStore, SHARED_LIMIT, STALE_AFTER, StoredOutput, owner_of, request_in as commands_request_in,
    run_owner, task_owner,
};
pub use domain::{CallAuthor, DomainStore, HeldRecord};
pub use files::Roots;
pub use holds::{HOLD_LEASE, Hold};
pub use log::{GuestLogBudget, LogTally};
pub use outbound::Outbound;
pub use record::HostCall;
pub(crate) use record::Recording;
pub(crate) use views::add_to_linker;

use capstan_config::{Config, ServiceConfig};

use super::bindings;
use super::call_state::CallCore;

/// What the operator can change while the host runs — outbound services,
/// file roots, capabilities' settings — built whole and swapped whole. A
/// call keeps the one it started with.
pub struct Setup {
    pub outbound: Outbound,
    pub roots: Roots,
    /// Where each root is.
    pub root_paths: BTreeMap<String, PathBuf>,
    /// Non-secret per-capability settings.
    pub settings: BTreeMap<String, BTreeMap<String, String>>,
}

impl Setup {
    /// Builds (connects nothing: clients are lazy; roots are opened).
    pub fn build(
        services: &BTreeMap<String, ServiceConfig>,
        roots: &BTreeMap<String, PathBuf>,
        settings: BTreeMap<String, BTreeMap<String, String>>,
    ) -> anyhow::Result<Setup> {
        Ok(Setup {
            outbound: Outbound::new(services)?,
            roots: Roots::open(roots)?,
            root_paths: roots.clone(),
            settings,
        })
    }

    fn empty() -> Setup {
        Setup::build(&BTreeMap::new(), &BTreeMap::new(), BTreeMap::new()).expect("nothing to build")
    }
}

/// What the host imports reach beyond the sandbox, handed to the runtime
/// when it is built: the domain store behind `library`, `drafts` and
/// `records`, and the audit log every command start and cancel is written
/// to before it happens. A runtime without them (loading, listing, tests
/// of the sandbox alone) answers those imports as unavailable and records
/// no command.
#[derive(Clone)]
pub struct HostStores {
    pub domain: Arc<dyn DomainStore>,
    pub commands: Arc<dyn CommandRecorder>,
    /// Where command output is copied for other nodes (PostgreSQL).
    pub output: Option<Arc<dyn OutputStore>>,
}

/// What host imports reach, shared by every call of one runtime.
pub struct HostServices {
    setup: RwLock<Arc<Setup>>,
    /// The domain store, when the runtime was built with one.
    domain: Option<Arc<dyn DomainStore>>,
    /// What all calls together may still log this second.
    pub guest_log: GuestLogBudget,
    /// The workers blocking file work runs on.
    pub(crate) file_pool: files::FilePool,
    /// The operator's commands and the processes running for callers.
    pub(crate) commands: CommandHost,
    /// The recycle folder (root [`RECYCLE_ROOT`]) files an upgrade
    /// replaces are kept in, when the runtime has a data directory.
    recycle_dir: Option<PathBuf>,
}

/// The root files an upgrade replaces are moved to: `recycle/` in the data
/// directory, unless the operator names a root of that name.
pub const RECYCLE_ROOT: &str = "recycle";

/// Lines and bytes one call may log.
pub(crate) fn log_caps() -> (u32, usize) {
    (log::MAX_CALL_LINES, log::MAX_CALL_BYTES)
}

impl HostServices {
    pub fn from_config(config: &Config, stores: Option<HostStores>) -> anyhow::Result<HostServices> {
        let settings = config.capabilities.iter().map(|(id, c)| (id.clone(), c.settings.clone())).collect();
        let (domain, recorder, output) = match stores {
            Some(s) => (Some(s.domain), Some(s.commands), s.output),
            None => (None, None, None),
        };
        let commands = CommandHost::from_config(config, recorder, output);
        let recycle_dir = Some(config.data_dir().join(RECYCLE_ROOT));
        let setup =
            Setup::build(&config.services, &host_roots(&config.roots, &commands, recycle_dir.as_deref())?, settings)?;
        Ok(HostServices::with(setup, commands, domain, recycle_dir))
    }

    fn with(
        setup: Setup,
        commands: CommandHost,
        domain: Option<Arc<dyn DomainStore>>,
        recycle_dir: Option<PathBuf>,
    ) -> HostServices {
        HostServices {
            setup: RwLock::new(Arc::new(setup)),
            domain,
            guest_log: GuestLogBudget::default(),
            file_pool: files::FilePool::default(),
            commands,
            recycle_dir,
        }
    }

    /// What a trial call sees: `setup` alone (built without roots), no
    /// store and no commands — a notification target's Test before its
    /// form is saved.
    pub(crate) fn trial(setup: Setup) -> HostServices {
        HostServices::with(setup, CommandHost::default(), None, None)
    }

    /// What loading sees: no roots, no services, no store, no settings, no
    /// commands, so `describe` and pre-initialisation can neither reach nor
    /// wait on anything outside the sandbox.
    pub(crate) fn isolated() -> HostServices {
        HostServices::with(Setup::empty(), CommandHost::default(), None, None)
    }

    /// The roots `roots` names, the one command output is archived under
    /// when commands are configured, and the recycle folder.
    pub(crate) fn roots_with_output(
        &self,
        roots: &BTreeMap<String, PathBuf>,
    ) -> anyhow::Result<BTreeMap<String, PathBuf>> {
        host_roots(roots, &self.commands, self.recycle_dir.as_deref())
    }

    /// The setup calls starting now get.
    pub fn setup(&self) -> Arc<Setup> {
        self.setup.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `setup` in place for the calls that start from now on.
    pub(crate) fn replace_setup(&self, setup: Setup) {
        *self.setup.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(setup);
    }

    /// The domain store, when the runtime was built with one.
    pub fn domain(&self) -> Option<&Arc<dyn DomainStore>> {
        self.domain.as_ref()
    }
}

/// `roots` and, when any command is configured, the `command-output` root
/// its archives are read through (made when missing).
/// The operator's roots with the host's own: command output (when
/// commands are configured) and the recycle folder, each made if missing.
/// A recycle folder that cannot be made leaves the host without it (an
/// upgrade then says there is none) rather than keeping it from starting.
fn host_roots(
    roots: &BTreeMap<String, PathBuf>,
    commands: &CommandHost,
    recycle_dir: Option<&Path>,
) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut all = roots.clone();
    for (name, dir, what) in
        [(OUTPUT_ROOT, commands.output_dir(), "command output folder"), (RECYCLE_ROOT, recycle_dir, "recycle folder")]
    {
        let Some(dir) = dir else { continue };
        if all.contains_key(name) {
            continue;
        }
        match std::fs::create_dir_all(dir) {
            Ok(()) => {
                all.insert(name.to_string(), dir.to_path_buf());
            }
            Err(e) if name == RECYCLE_ROOT => {
                tracing::warn!(folder = %dir.display(), error = %e, "no recycle folder: upgrades cannot replace files");
            }
            Err(e) => return Err(anyhow::anyhow!("cannot make the {what} {}: {e}", dir.display())),
        }
    }
    Ok(all)
}

impl bindings::capstan::host::types::Host for CallCore {}
impl bindings::capstan::capability::types::Host for CallCore {}
