//! The documentation against what the binary does: the built-in
//! capabilities page lists every built-in with its real label, and the
//! pages that list the host interfaces by class agree with the effect table.

use std::collections::BTreeMap;

use capstan_tests::host::TestHost;

/// `id → label` from the table of `docs/capabilities.md`: rows whose first
/// cell names capabilities in backticks (one or several, comma-separated)
/// and whose second gives the labels in the same order.
fn documented() -> BTreeMap<String, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/capabilities.md");
    let page = std::fs::read_to_string(path).unwrap();
    let mut rows = BTreeMap::new();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let ids: Vec<&str> = cells[1].split(',').map(|id| id.trim().trim_matches('`')).collect();
        let labels: Vec<&str> = cells[2].split(',').map(str::trim).collect();
        assert_eq!(ids.len(), labels.len(), "docs/capabilities.md: {line}");
        for (id, label) in ids.into_iter().zip(labels) {
            assert!(rows.insert(id.to_string(), label.to_string()).is_none(), "{id} is listed twice");
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread")]
async fn the_built_in_capabilities_page_lists_every_built_in_with_its_label() {
    let host = TestHost::new();
    let runtime = host.start().await.unwrap();
    let loaded: BTreeMap<String, String> =
        runtime.snapshot().active.values().map(|l| (l.descriptor.id.clone(), l.descriptor.label.to_string())).collect();
    assert!(loaded.len() >= 17, "only {} built-ins loaded", loaded.len());
    assert_eq!(documented(), loaded, "docs/capabilities.md against the built-in descriptors");
}

/// `interface → class` from the class tables of a page: rows whose first
/// cell is a class and whose second lists interfaces in backticks.
fn class_table(page: &str) -> BTreeMap<String, String> {
    let path = format!("{}/../{page}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 || !["read", "preview", "propose", "execute"].contains(&cells[1]) {
            continue;
        }
        for name in cells[2].split(',').map(|n| n.trim().trim_matches('`')) {
            rows.insert(name.to_string(), cells[1].to_string());
        }
    }
    assert!(!rows.is_empty(), "{page} has no class table");
    rows
}

#[test]
fn the_pages_that_list_interfaces_by_class_follow_the_effect_table() {
    let table: BTreeMap<String, String> = capstan::runtime::effects::HOST_INTERFACES
        .iter()
        .filter_map(|(name, class)| name.strip_prefix("capstan:host/").map(|n| (n.to_string(), class.to_string())))
        .filter(|(name, _)| name != "types")
        .collect();
    for page in ["docs/authority.md", "docs/architecture.md"] {
        assert_eq!(class_table(page), table, "{page} against HOST_INTERFACES");
    }
}
