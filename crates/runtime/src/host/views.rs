//! What each family of host interfaces sees of a call. The linker hands an
//! import its family's view, not the whole [`CallState`]: the
//! [`CallCore`] every import needs (grant, target, setup, deadline, what
//! the call has done) and the few parts the family owns. A log line cannot
//! reach the call's holds, a file copy cannot touch a command's end, and
//! what an interface may change is read off its view's fields.
//!
//! | family | interfaces | its parts |
//! |---|---|---|
//! | [`CallCore`] | `invocation`, `outbound-read`, `outbound-write`, `types` | none |
//! | [`LogView`] | `log` | the call's tally, the host-wide log budget |
//! | [`DomainView`] | `library`, `drafts`, `records` | the call's holds, the domain store |
//! | [`FilesView`] | `files-read`, `files-write` | the blocking-file pool, the command host (whose archives a list hides) |
//! | [`CommandsView`] | `commands`, `commands-read` | the command host, how the call's last command ended |

use std::sync::Arc;

use wasmtime::component::{HasData, HasSelf, Linker};

use super::commands::{CommandEnd, CommandHost};
use super::domain::DomainStore;
use super::files::FilePool;
use super::log::{GuestLogBudget, LogTally};
use super::{Hold, bindings};
use crate::call_state::{CallCore, CallState};

/// A family's view of a call: it reaches the [`CallCore`], which
/// [`host_call`](super::boundary::host_call) checks and records through.
pub(crate) trait HostView: Send {
    fn core(&mut self) -> &mut CallCore;
}

impl HostView for CallCore {
    fn core(&mut self) -> &mut CallCore {
        self
    }
}

/// `log`: the call's tally and the budget all calls share.
pub(crate) struct LogView<'a> {
    pub(crate) core: &'a mut CallCore,
    pub(crate) tally: &'a mut LogTally,
    pub(crate) budget: &'a GuestLogBudget,
}

/// `library`, `drafts`, `records`: the records the call holds, and the
/// store (absent in a runtime built without one).
pub(crate) struct DomainView<'a> {
    pub(crate) core: &'a mut CallCore,
    pub(crate) holds: &'a mut Vec<Hold>,
    pub(crate) store: Option<&'a Arc<dyn DomainStore>>,
}

/// `files-read`, `files-write`: where blocking file work runs, and the
/// command host, whose other owners' archives a listing hides.
pub(crate) struct FilesView<'a> {
    pub(crate) core: &'a mut CallCore,
    pub(crate) pool: &'a FilePool,
    pub(crate) commands: &'a CommandHost,
}

/// `commands`, `commands-read`: the operator's commands and the processes
/// running, and how the call's last command ended.
pub(crate) struct CommandsView<'a> {
    pub(crate) core: &'a mut CallCore,
    pub(crate) host: &'a CommandHost,
    pub(crate) end: &'a mut Option<CommandEnd>,
}

macro_rules! view {
    ($family:ident, $view:ident) => {
        impl HostView for $view<'_> {
            fn core(&mut self) -> &mut CallCore {
                self.core
            }
        }

        /// What the linker knows the family by: its view.
        struct $family;

        impl HasData for $family {
            type Data<'a> = $view<'a>;
        }
    };
}

view!(Log, LogView);
view!(Domain, DomainView);
view!(Files, FilesView);
view!(Commands, CommandsView);

impl CallState {
    pub(crate) fn log_view(&mut self) -> LogView<'_> {
        LogView { core: &mut self.core, tally: &mut self.log, budget: &self.services.guest_log }
    }

    fn domain_view(&mut self) -> DomainView<'_> {
        DomainView { core: &mut self.core, holds: &mut self.holds, store: self.services.domain() }
    }

    fn files_view(&mut self) -> FilesView<'_> {
        FilesView { core: &mut self.core, pool: &self.services.file_pool, commands: &self.services.commands }
    }

    fn commands_view(&mut self) -> CommandsView<'_> {
        CommandsView { core: &mut self.core, host: &self.services.commands, end: &mut self.command_end }
    }

    fn core_view(&mut self) -> &mut CallCore {
        &mut self.core
    }
}

/// Adds every `capstan:host` import to `linker`, each handed its family's
/// view of the call.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use bindings::capstan::host as h;
    type Core = HasSelf<CallCore>;
    bindings::capstan::capability::types::add_to_linker::<CallState, Core>(linker, CallState::core_view)?;
    h::types::add_to_linker::<CallState, Core>(linker, CallState::core_view)?;
    h::invocation::add_to_linker::<CallState, Core>(linker, CallState::core_view)?;
    h::outbound_read::add_to_linker::<CallState, Core>(linker, CallState::core_view)?;
    h::outbound_write::add_to_linker::<CallState, Core>(linker, CallState::core_view)?;
    h::log::add_to_linker::<CallState, Log>(linker, CallState::log_view)?;
    h::library::add_to_linker::<CallState, Domain>(linker, CallState::domain_view)?;
    h::drafts::add_to_linker::<CallState, Domain>(linker, CallState::domain_view)?;
    h::records::add_to_linker::<CallState, Domain>(linker, CallState::domain_view)?;
    h::files_read::add_to_linker::<CallState, Files>(linker, CallState::files_view)?;
    h::files_write::add_to_linker::<CallState, Files>(linker, CallState::files_view)?;
    h::commands::add_to_linker::<CallState, Commands>(linker, CallState::commands_view)?;
    h::commands_read::add_to_linker::<CallState, Commands>(linker, CallState::commands_view)?;
    Ok(())
}
