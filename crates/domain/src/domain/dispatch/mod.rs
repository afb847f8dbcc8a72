//! The domain store as the `library`, `drafts` and `records` host imports
//! see it: three tables, each a list of names with the handler that reads
//! the JSON arguments (unknown fields refused) and answers JSON. The names
//! are the contract capability authors write against; `docs/domain.md`
//! lists them, and a test holds that list to these tables.

use capstan_contract::ops::Carrier;
use capstan_contract::ops::queries::{Inventory, InventoryItem};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

mod drafts;
mod queries;
mod transitions;

pub use drafts::DRAFTS;
pub use queries::QUERIES;
pub use transitions::TRANSITIONS;

use super::{Author, Domain, DomainError, EntityKind};
use crate::authz::AuthzError;
use crate::tasks::TaskError;

/// What carries an operation out: the store, who asks, and the
/// operation's JSON arguments.
type Handler = for<'a> fn(&'a Domain, &'a Author, &'a str) -> BoxFuture<'a, Result<Value, DomainError>>;

/// One named query, draft kind or transition and what carries it out.
pub struct Operation {
    pub name: &'static str,
    /// The host interface the contract says carries it.
    pub carrier: Carrier,
    run: Handler,
}

/// Serves the contract's operation `$op`: its arguments read from JSON
/// (unknown fields refused), `$body` run with them, and its answer, which
/// must be the contract's answer type, written back as JSON.
macro_rules! serve {
    ($op:ty, |$domain:pat_param, $by:pat_param, $args:ident| $body:expr) => {
        $crate::domain::dispatch::Operation::new(
            <$op as capstan_contract::Operation>::NAME,
            <$op as capstan_contract::Operation>::CARRIER,
            |$domain, $by, text| {
                Box::pin(async move {
                    let $args: <$op as capstan_contract::Operation>::Args =
                        $crate::domain::dispatch::args(<$op as capstan_contract::Operation>::NAME, text)?;
                    let answer: <$op as capstan_contract::Operation>::Answer = $body;
                    $crate::domain::dispatch::answer(answer)
                })
            },
        )
    };
}
pub(crate) use serve;

impl Operation {
    pub(crate) const fn new(name: &'static str, carrier: Carrier, run: Handler) -> Operation {
        Operation { name, carrier, run }
    }
}

/// The names of a table, in order.
pub fn names(table: &[Operation]) -> Vec<&'static str> {
    table.iter().map(|op| op.name).collect()
}

/// Runs `name` from `table` (`what` names the table in the refusal).
async fn run(
    table: &[Operation],
    what: &str,
    domain: &Domain,
    by: &Author,
    name: &str,
    text: &str,
) -> Result<Value, DomainError> {
    match table.iter().find(|op| op.name == name) {
        Some(op) => (op.run)(domain, by, text).await,
        None => Err(DomainError::NotFound(format!("no {what} {name:?}; known: {}", names(table).join(", ")))),
    }
}

pub(crate) fn args<T: DeserializeOwned>(name: &str, text: &str) -> Result<T, DomainError> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    serde_json::from_str(text).map_err(|e| DomainError::Invalid(format!("arguments of {name}: {e}")))
}

pub(crate) fn answer<T: serde::Serialize>(value: T) -> Result<Value, DomainError> {
    serde_json::to_value(value).map_err(|e| DomainError::Invalid(e.to_string()))
}

pub(crate) fn from_authz(e: AuthzError) -> DomainError {
    match e {
        AuthzError::Invalid(m) => DomainError::Invalid(m),
        AuthzError::NotFound(what, id) => DomainError::NotFound(format!("no {what} {id}")),
        AuthzError::Conflict(m) | AuthzError::Forbidden(m) => DomainError::Conflict(m),
        AuthzError::Sql(e) => DomainError::Sql(e),
    }
}

pub(crate) fn from_tasks(e: TaskError) -> DomainError {
    match e {
        TaskError::NotFound(id) => DomainError::NotFound(format!("no task {id}")),
        TaskError::Sql(e) => DomainError::Sql(e),
        other => DomainError::Conflict(other.to_string()),
    }
}

impl Domain {
    /// Runs a `library` query as the host sees it.
    pub async fn query(&self, name: &str, params: &str) -> Result<Value, DomainError> {
        // Queries are reads: who asks is not recorded.
        run(QUERIES, "library query", self, &Author::new("library"), name, params).await
    }

    /// Runs a `library` query as `by` may see it: a component sees only
    /// the outline of decisions it did not open (`decisions.list`).
    pub async fn query_as(&self, by: &Author, name: &str, params: &str) -> Result<Value, DomainError> {
        run(QUERIES, "library query", self, by, name, params).await
    }

    /// Creates a `drafts` record.
    pub async fn create_draft(&self, by: &Author, kind: &str, draft: &str) -> Result<Value, DomainError> {
        run(DRAFTS, "draft kind", self, by, kind, draft).await
    }

    /// Applies a `records` transition.
    pub async fn transition(&self, by: &Author, name: &str, arguments: &str) -> Result<Value, DomainError> {
        run(TRANSITIONS, "transition", self, by, name, arguments).await
    }

    /// What the library holds and wants: entities with their slots, each
    /// with what is happening to it (`activity`).
    pub async fn inventory(&self, kind: Option<EntityKind>, limit: i64) -> Result<Inventory, DomainError> {
        let mut items = Vec::new();
        for entity in self.entities(kind, limit).await? {
            let mut slots = Vec::new();
            let seasons = match entity.kind {
                EntityKind::Tv => self.season_progress(&entity.id).await?,
                EntityKind::Movie => Default::default(),
            };
            for slot in self.slots_for_entity(&entity.id).await? {
                let mut shown = self.slot_with_activity(&slot).await?;
                shown.episodes = slot.season.and_then(|s| seasons.get(&s).copied());
                slots.push(shown);
            }
            items.push(InventoryItem { entity, slots });
        }
        Ok(Inventory { items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `docs/domain.md` gives under the heading that starts with
    /// `heading`: each backticked name written with its arguments
    /// (`` `plan.get {id}` ``) or followed by a parenthesis (`` `entity` (kind, ...) ``).
    fn documented(heading: &str) -> Vec<String> {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/domain.md")).unwrap();
        let section = page.split("\n## ").find(|s| s.starts_with(heading)).expect("the section is there");
        let section = section.split_once('\n').unwrap().1.replace('\n', " ");
        let spans: Vec<&str> = section.split('`').collect();
        let mut names = Vec::new();
        // Odd pieces are inside backticks.
        for i in (1..spans.len()).step_by(2) {
            let span = spans[i];
            let name = span.split(' ').next().unwrap();
            let after = spans.get(i + 1).copied().unwrap_or_default();
            let looks_like_name =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '-');
            if looks_like_name && (span.contains(" {") || after.starts_with(" (")) {
                names.push(name.to_string());
            }
        }
        names
    }

    #[test]
    fn the_documented_names_are_the_tables() {
        for (heading, table) in
            [("`library` queries", QUERIES), ("`drafts` kinds", DRAFTS), ("`records` transitions", TRANSITIONS)]
        {
            let mut documented = documented(heading);
            let mut names: Vec<String> = names(table).into_iter().map(str::to_string).collect();
            documented.sort();
            names.sort();
            assert_eq!(documented, names, "docs/domain.md's {heading} against the dispatch table");
        }
    }

    #[test]
    fn each_table_holds_the_operations_its_interface_carries() {
        for (table, carrier) in
            [(QUERIES, Carrier::Library), (DRAFTS, Carrier::Drafts), (TRANSITIONS, Carrier::Records)]
        {
            for op in table {
                assert_eq!(op.carrier, carrier, "{} is in the wrong table", op.name);
            }
        }
    }

    /// The bullet of `docs/domain.md`'s records that starts with `record`.
    fn record_bullet(record: &str) -> String {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/domain.md")).unwrap();
        let records = page.split("\n## ").find(|s| s.starts_with("Records")).expect("the records section");
        let start = format!("- **{record}**");
        let bullet = records.split("\n- ").map(|b| format!("- {b}")).find(|b| b.starts_with(&start));
        bullet.unwrap_or_else(|| panic!("docs/domain.md has no record {record}")).replace('\n', " ")
    }

    #[test]
    fn the_documented_statuses_are_the_contracts() {
        use capstan_contract::status::*;
        let lists: [(&str, &[&str]); 8] = [
            ("Slot", SlotStatus::NAMES),
            ("Source release", IdentityStatus::NAMES),
            ("Acquisition plan", PlanStatus::NAMES),
            ("Download task", DownloadStatus::NAMES),
            ("Artifact", ArtifactKind::NAMES),
            ("Organization", OrganizationStatus::NAMES),
            ("Organization", OrganizeMode::NAMES),
            ("Decision", DecisionStatus::NAMES),
        ];
        for (record, names) in lists {
            let bullet = record_bullet(record);
            // Words written in code spans: `draft → reserved` names two.
            let spans = bullet.split('`').skip(1).step_by(2);
            let words: Vec<&str> =
                spans.flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))).collect();
            for name in names {
                assert!(words.contains(name), "docs/domain.md's {record} does not name `{name}`");
            }
        }
    }

    #[test]
    fn every_name_is_listed_once() {
        for table in [QUERIES, DRAFTS, TRANSITIONS] {
            let mut seen = std::collections::BTreeSet::new();
            for name in names(table) {
                assert!(seen.insert(name), "{name} is listed twice");
            }
        }
    }
}
