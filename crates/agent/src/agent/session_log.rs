//! The append-only session log of a run: one JSON
//! line per thing the conversation gained — a user request, the model's
//! answer (written before any of its tool calls run), the tool results, a
//! new plan, a compacted history. Each line is written before the loop goes
//! on, so a worker that takes a run over rebuilds the same conversation; a
//! torn last line (the writer died mid-line) is ignored. A step is flushed
//! to disk once: its results sync while the model works on the next
//! answer, and the next line that must be durable waits for that sync and
//! fails with it. Where the lines are kept (a file per run, or rows of the
//! database that every node reaches) is the [`SessionStore`](super::session_store::SessionStore)'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::providers::{Block, Message, Role};
use super::session_store;
use super::tools::plan::StepPlan;

/// How a host's note to the model begins, beside a user's message: the
/// words after it are the host's, not the user's.
pub(crate) const HOST_NOTE: &str = "[Checked by Capstan before going on]";

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A user message is taken: the goal or a later message. It starts a
    /// task (a new `request_id`) or, with `continues`, goes on with the
    /// current one under the same `request_id`, keeping its plan.
    Request {
        request_id: String,
        message_seq: i64,
        text: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        continues: bool,
        /// What the host checked before the message was taken, told to
        /// the model beside it (it starts with [`HOST_NOTE`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The model's answer, tool calls included.
    Assistant { content: Vec<Block> },
    /// The results of the answer's tool calls.
    ToolResults { content: Vec<Block> },
    /// The plan after an `update_plan` call (or `null` when a new request clears it).
    Plan { plan: Option<StepPlan> },
    /// The history after compaction replaces everything before.
    Compacted { messages: Vec<Message> },
}

/// What a log says about a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionState {
    pub messages: Vec<Message>,
    pub plan: Option<StepPlan>,
    /// The request being answered, and the seq of its latest message.
    pub request: Option<(String, i64)>,
    /// The words of the message that started the task.
    pub task_text: String,
    /// The words of the request being answered, kept whole by compaction:
    /// the task's words, and the latest follow-up when there is one.
    pub request_text: String,
    /// The highest message seq taken into the conversation.
    pub last_message_seq: i64,
}

impl SessionState {
    /// Applies one entry.
    pub fn apply(&mut self, entry: &Entry) {
        match entry {
            Entry::Request { request_id, message_seq, text, continues, note } => {
                let mut words = vec![Block::Text { text: text.clone() }];
                if let Some(note) = note {
                    words.push(Block::Text { text: note.clone() });
                }
                // Results the model has not answered yet (the run stopped
                // there) and the message that follows them are one turn.
                match self.messages.last_mut() {
                    Some(last) if last.role == Role::User && last.content.iter().any(Block::is_tool_result) => {
                        last.content.extend(words)
                    }
                    _ => self.messages.push(Message { role: Role::User, content: words }),
                }
                self.request = Some((request_id.clone(), *message_seq));
                if *continues {
                    self.request_text = format!("{}\n\n{text}", self.task_text);
                } else {
                    self.task_text = text.clone();
                    self.request_text = text.clone();
                }
                self.last_message_seq = self.last_message_seq.max(*message_seq);
            }
            Entry::Assistant { content } => {
                self.messages.push(Message { role: Role::Assistant, content: content.clone() })
            }
            Entry::ToolResults { content } => {
                self.messages.push(Message { role: Role::User, content: content.clone() })
            }
            Entry::Plan { plan } => self.plan = plan.clone(),
            Entry::Compacted { messages } => self.messages = messages.clone(),
        }
    }

    /// Tool calls of the last answer that have no result yet: what a crash
    /// interrupted.
    pub(crate) fn pending_calls(&self) -> Vec<(String, String, serde_json::Value)> {
        let Some(last) = self.messages.last() else { return Vec::new() };
        if last.role != Role::Assistant {
            return Vec::new();
        }
        last.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect()
    }
}

/// The log of one run, appended to where its [`SessionStore`](super::session_store::SessionStore) keeps it.
pub(crate) struct SessionLog {
    sink: Sink,
    /// A sync started by [`SessionLog::append_syncing_behind`], not yet
    /// known to have succeeded.
    syncing: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Where a log's lines go.
enum Sink {
    /// A file, appended to; a sync makes it durable.
    File(Arc<std::fs::File>),
    /// Rows of `agent_session_entry`: lines not synced yet wait here, and a
    /// sync inserts them in one transaction.
    Rows(session_store::Rows),
}

impl SessionLog {
    /// The log's path for `run_id` under `dir`.
    pub fn path(dir: &Path, run_id: &str) -> PathBuf {
        dir.join(format!("{run_id}.jsonl"))
    }

    /// Opens (creating) the log file and reads what it holds.
    pub(crate) fn open_file(dir: &Path, run_id: &str) -> std::io::Result<(SessionLog, SessionState)> {
        std::fs::create_dir_all(dir)?;
        let path = Self::path(dir, run_id);
        let session = read(&path)?;
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        Ok((SessionLog { sink: Sink::File(Arc::new(file)), syncing: None }, session))
    }

    /// A log kept in the database's rows.
    pub(crate) fn of_rows(rows: session_store::Rows) -> SessionLog {
        SessionLog { sink: Sink::Rows(rows), syncing: None }
    }

    /// Appends one entry and makes it, and what was written before it,
    /// durable.
    pub async fn append(&mut self, entry: &Entry) -> std::io::Result<()> {
        self.settle().await?;
        self.append_unsynced(entry)?;
        self.start_sync().await.map_err(std::io::Error::other)?
    }

    /// Appends one entry and starts making it durable in a task of its
    /// own, for a caller that has nothing to do with it before its next
    /// append: a step's results sync while the model works on the next
    /// answer. The next append that syncs (or [`SessionLog::settle`])
    /// waits for the sync and fails with it.
    pub(crate) async fn append_syncing_behind(&mut self, entry: &Entry) -> std::io::Result<()> {
        self.settle().await?;
        self.append_unsynced(entry)?;
        self.syncing = Some(self.start_sync());
        Ok(())
    }

    /// Starts making every line written so far durable.
    fn start_sync(&mut self) -> tokio::task::JoinHandle<std::io::Result<()>> {
        match &mut self.sink {
            Sink::File(file) => {
                let file = file.clone();
                tokio::task::spawn_blocking(move || file.sync_data())
            }
            Sink::Rows(rows) => tokio::spawn(rows.flush()),
        }
    }

    /// Waits for a sync started by [`SessionLog::append_syncing_behind`];
    /// its failure is this call's. (It must be heard here: a later sync of
    /// the same file may succeed without the lines this one lost.)
    pub async fn settle(&mut self) -> std::io::Result<()> {
        match self.syncing.take() {
            Some(sync) => sync.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }

    /// [`SessionLog::settle`], and then makes lines written without a sync
    /// durable where they are not yet in the store: a file holds them
    /// already (a crash of the process does not lose them), rows hold
    /// them only once inserted. So what the run logged is there for the
    /// next reader — the snapshot of a run that stops, the node that
    /// takes it over — however the run ends.
    pub(crate) async fn settle_all(&mut self) -> std::io::Result<()> {
        self.settle().await?;
        match &mut self.sink {
            Sink::Rows(rows) if rows.has_pending() => rows.flush().await,
            _ => Ok(()),
        }
    }

    /// Appends one entry, made durable by the next sync
    /// ([`SessionLog::append`], [`SessionLog::append_syncing_behind`]):
    /// a step's answer goes with its results, one sync a step. A crash in
    /// between loses at most that answer (a torn last line is ignored),
    /// and the model is asked again: what its calls wrote is in the
    /// ledger under the request's keys, so they are not made twice.
    pub(crate) fn append_unsynced(&mut self, entry: &Entry) -> std::io::Result<()> {
        let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
        match &mut self.sink {
            Sink::File(file) => (&**file).write_all(format!("{line}\n").as_bytes()),
            Sink::Rows(rows) => {
                rows.push(line);
                Ok(())
            }
        }
    }
}

/// Replays the lines of a log; only the last may be torn (`torn_tail`:
/// the text did not end with a line break), and is then ignored. `named`
/// says where the lines came from, for the error.
pub(crate) fn replay<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    torn_tail: bool,
    named: &str,
) -> std::io::Result<SessionState> {
    let mut session = SessionState::default();
    let lines: Vec<&str> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Entry>(line) {
            Ok(entry) => session.apply(&entry),
            // Only the last line can be torn by a crash; anything earlier is damage.
            Err(_) if i + 1 == lines.len() && torn_tail => {
                tracing::warn!(log = %named, "ignoring a torn last line of the session log")
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{named} line {}: {e}", i + 1),
                ));
            }
        }
    }
    Ok(session)
}

/// Replays a log file; a missing file is an empty session.
pub fn read(path: &Path) -> std::io::Result<SessionState> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    replay(text.lines(), !text.ends_with('\n'), &path.display().to_string())
}
