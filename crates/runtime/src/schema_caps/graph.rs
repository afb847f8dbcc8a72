//! A schema as a graph of its schema nodes: each node with the nodes it
//! applies to the same or a nested part of an input (its subschemas and
//! the target of its `$ref`), found by walking the keywords that hold
//! subschemas, so a property named `$ref` or `pattern` is a name, not a
//! keyword. The walk checks every reference on the way and collects the
//! patterns; [`Graph::expansion`] then measures what a check visits.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// Keywords whose value is one subschema (`items` may also be a list).
const ONE: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of subschemas.
const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas (`dependencies` may also
/// map a name to a list of names, which is no subschema).
const MAP: &[&str] = &["dependentSchemas", "dependencies", "patternProperties", "properties"];
/// Keywords whose subschemas apply only where a reference names them.
const DEFINITIONS: &[&str] = &["$defs", "definitions"];
/// References the host does not follow: where they lead depends on the
/// path a check took to reach them, which a measure made at load cannot
/// know.
const DYNAMIC: &[&str] = &["$dynamicRef", "$recursiveRef"];

/// A node by the address of its value inside the schema, which stays put
/// while the schema is borrowed.
type NodeId = usize;

fn id(value: &Value) -> NodeId {
    std::ptr::from_ref(value) as usize
}

struct Node {
    /// Where the node is, as a reference to it (`#/properties/name`).
    at: String,
    /// The nodes a check applies along with this one.
    applies: Vec<NodeId>,
    /// This node's own share of a check's cost.
    weight: u64,
}

/// What a check visits with every reference followed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Expansion {
    /// Schema nodes.
    pub(super) nodes: u64,
    /// Their weight (see [`Measured::weight`](super::Measured)).
    pub(super) weight: u64,
    /// The longest path from the root, in nodes: how deep a check's own
    /// calls nest.
    pub(super) depth: u64,
}

impl Expansion {
    /// Adds what a child applied along with this node visits.
    fn add(&mut self, child: &Expansion) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.weight = self.weight.saturating_add(child.weight);
        self.depth = self.depth.max(child.depth.saturating_add(1));
    }
}

/// The schema nodes of one schema.
pub(super) struct Graph {
    nodes: HashMap<NodeId, Node>,
    /// Every node, in the order found, the root first.
    order: Vec<NodeId>,
    /// Each different pattern, with where it was first found.
    pub(super) patterns: BTreeMap<String, String>,
}

fn is_schema(value: &Value) -> bool {
    value.is_object() || value.is_boolean()
}

/// `key` as a segment of a JSON pointer.
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `at` made fit for a one-line message: control characters escaped, cut
/// to 120 bytes.
pub(super) fn place(at: &str) -> String {
    let text = crate::text::escape_controls(at);
    crate::text::clip(&text, 120).into_owned()
}

/// What comparing an input with `value` (an `enum` or `const`) may cost:
/// its values and the bytes of its strings.
fn size(value: &Value) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        total = total.saturating_add(1);
        match value {
            Value::String(s) => total = total.saturating_add(s.len() as u64),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                total = total.saturating_add(map.keys().map(|k| k.len() as u64).sum());
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    total
}

/// The node `reference` leads to in `root`, or why it is not followed.
fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let shown = super::shown(reference);
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(format!("refers to {shown:?}, outside the schema: only references within it (#/…) are followed"));
    };
    let pointer = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .map_err(|_| format!("refers to {shown:?}, which is not UTF-8 once decoded"))?;
    if pointer.is_empty() {
        return Ok(root);
    }
    if !pointer.starts_with('/') {
        return Err(format!("refers to {shown:?} by name: only references by JSON pointer (#/…) are followed"));
    }
    match root.pointer(&pointer) {
        Some(target) if is_schema(target) => Ok(target),
        Some(_) => Err(format!("refers to {shown:?}, which is not a schema")),
        None => Err(format!("refers to {shown:?}, which is not in the schema")),
    }
}

/// Notes that `node` applies `sub` (found at `at`) and queues it.
fn applied<'a>(node: &mut Node, queue: &mut Vec<(&'a Value, String)>, sub: &'a Value, at: String) {
    node.applies.push(id(sub));
    queue.push((sub, at));
}

impl Graph {
    /// Walks `root`'s schema nodes, following references, and refuses a
    /// reference the host does not follow.
    pub(super) fn of(root: &Value) -> Result<Graph, String> {
        let draft4 = root.get("$schema").and_then(Value::as_str).is_some_and(|s| s.contains("draft-04"));
        let mut graph = Graph { nodes: HashMap::new(), order: Vec::new(), patterns: BTreeMap::new() };
        let mut queue = vec![(root, "#".to_string())];
        while let Some((value, at)) = queue.pop() {
            if graph.nodes.contains_key(&id(value)) {
                continue;
            }
            let mut node = Node { at: at.clone(), applies: Vec::new(), weight: 1 };
            if let Value::Object(map) = value {
                node.weight += map.len() as u64;
                let is_root = std::ptr::eq(value, root);
                for (key, child) in map {
                    let here = format!("{at}/{}", segment(key));
                    match key.as_str() {
                        k if ONE.contains(&k) && is_schema(child) => applied(&mut node, &mut queue, child, here),
                        k if LIST.contains(&k) => {
                            for (i, sub) in child.as_array().into_iter().flatten().enumerate() {
                                if is_schema(sub) {
                                    applied(&mut node, &mut queue, sub, format!("{here}/{i}"));
                                }
                            }
                        }
                        k if MAP.contains(&k) => {
                            for (name, sub) in child.as_object().into_iter().flatten() {
                                if k == "patternProperties" {
                                    graph.patterns.entry(name.clone()).or_insert_with(|| here.clone());
                                }
                                if is_schema(sub) {
                                    applied(&mut node, &mut queue, sub, format!("{here}/{}", segment(name)));
                                }
                            }
                        }
                        k if DEFINITIONS.contains(&k) => {
                            for (name, sub) in child.as_object().into_iter().flatten() {
                                if is_schema(sub) {
                                    queue.push((sub, format!("{here}/{}", segment(name))));
                                }
                            }
                        }
                        "$ref" => {
                            if let Some(reference) = child.as_str() {
                                let target =
                                    resolve(root, reference).map_err(|e| format!("{e} (at {})", place(&at)))?;
                                applied(&mut node, &mut queue, target, reference.to_string());
                            }
                        }
                        k if DYNAMIC.contains(&k) => {
                            return Err(format!("uses {k} at {}, which the host does not follow", place(&at)));
                        }
                        "$id" if !is_root => {
                            return Err(format!(
                                "sets $id at {}: only the root may, as an $id below it changes what references mean",
                                place(&at)
                            ));
                        }
                        "id" if draft4 && !is_root && child.is_string() => {
                            return Err(format!(
                                "sets id at {}: only the root may, as an id below it changes what references mean",
                                place(&at)
                            ));
                        }
                        "pattern" => {
                            if let Some(pattern) = child.as_str() {
                                graph.patterns.entry(pattern.to_string()).or_insert_with(|| here.clone());
                            }
                        }
                        "enum" | "const" => node.weight = node.weight.saturating_add(size(child)),
                        _ => {}
                    }
                }
            }
            graph.order.push(id(value));
            graph.nodes.insert(id(value), node);
        }
        Ok(graph)
    }

    /// What a check of the root visits with every reference followed;
    /// refuses a reference cycle anywhere. Each node's figures are computed
    /// once, after its children's, and reused wherever it is applied again,
    /// so the work is proportional to the graph, not to its expansion
    /// (figures saturate rather than overflow).
    pub(super) fn expansion(&self) -> Result<Expansion, String> {
        enum Mark {
            Open,
            Done(Expansion),
        }
        let own = |node: NodeId| Expansion { nodes: 1, weight: self.nodes[&node].weight, depth: 1 };
        let mut marks: HashMap<NodeId, Mark> = HashMap::with_capacity(self.nodes.len());
        // (node, next child to visit, its figures so far)
        let mut stack: Vec<(NodeId, usize, Expansion)> = Vec::new();
        for &start in &self.order {
            if marks.contains_key(&start) {
                continue;
            }
            marks.insert(start, Mark::Open);
            stack.push((start, 0, own(start)));
            while let Some(top) = stack.last_mut() {
                if let Some(&child) = self.nodes[&top.0].applies.get(top.1) {
                    top.1 += 1;
                    match marks.get(&child) {
                        Some(Mark::Done(below)) => top.2.add(below),
                        Some(Mark::Open) => {
                            return Err(format!(
                                "has a reference cycle through {}: recursive schemas are not accepted",
                                place(&self.nodes[&child].at)
                            ));
                        }
                        None => {
                            marks.insert(child, Mark::Open);
                            stack.push((child, 0, own(child)));
                        }
                    }
                    continue;
                }
                let (done, _, figures) = stack.pop().expect("the loop's own top");
                if let Some(parent) = stack.last_mut() {
                    parent.2.add(&figures);
                }
                marks.insert(done, Mark::Done(figures));
            }
        }
        match self.order.first().and_then(|root| marks.get(root)) {
            Some(Mark::Done(root)) => Ok(*root),
            _ => Ok(Expansion { nodes: 1, weight: 1, depth: 1 }),
        }
    }
}
