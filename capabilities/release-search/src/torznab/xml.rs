//! The small XML toolkit both Torznab documents need: a namespace-aware
//! event walk over `quick-xml`, attribute lookup, text collection, and
//! recognising Torznab's `<error code description/>` answer.

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

/// Why a body could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocError {
    /// The indexer answered Torznab's error element.
    Torznab { code: u32, description: String },
    /// The body is not the XML document expected.
    Malformed(String),
}

/// One element start, as the walkers see it.
pub struct Element {
    /// Namespace URI, when the name is bound to one.
    pub namespace: Option<String>,
    /// Name without prefix.
    pub local: String,
    attributes: Vec<(String, String)>,
}

impl Element {
    fn from_start(ns: ResolveResult<'_>, start: &BytesStart<'_>) -> Result<Element, DocError> {
        let namespace = match ns {
            ResolveResult::Bound(ns) => Some(String::from_utf8_lossy(ns.0.as_ref()).into_owned()),
            _ => None,
        };
        let mut attributes = Vec::new();
        for attr in start.attributes() {
            let attr = attr.map_err(|e| DocError::Malformed(format!("bad attribute: {e}")))?;
            let value = attr
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| DocError::Malformed(format!("bad attribute value: {e}")))?;
            let key = attr.key.local_name();
            attributes.push((key.as_ref().to_string(), value.into_owned()));
        }
        Ok(Element { namespace, local: start.local_name().as_ref().to_string(), attributes })
    }

    /// The value of attribute `name` (matched without prefix).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What the walk reports to a document parser.
pub enum Step {
    /// An element opened; `empty` when it closes at once (`<x/>`).
    Open { element: Element, empty: bool },
    /// Character data (entities and CDATA already resolved).
    Text(String),
    /// The innermost open element closed.
    Close,
}

/// Walks `body`, calling `visit` for every element and text, and checks the
/// document is well formed to the end. A root `<error>` becomes
/// [`DocError::Torznab`] whatever the caller expected.
pub fn walk(body: &str, mut visit: impl FnMut(Step) -> Result<(), DocError>) -> Result<(), DocError> {
    let mut reader = NsReader::from_str(body);
    let mut depth = 0usize;
    let mut saw_root = false;
    loop {
        let malformed = |e: quick_xml::Error, at: u64| DocError::Malformed(format!("{e} (at byte {at})"));
        let position = reader.buffer_position();
        let (ns, event) = reader.read_resolved_event().map_err(|e| malformed(e, position))?;
        match event {
            Event::Start(_) | Event::Empty(_) if depth == 0 && saw_root => {
                return Err(DocError::Malformed("more than one root element".into()));
            }
            Event::Start(start) => {
                let element = Element::from_start(ns, &start)?;
                if depth == 0 {
                    saw_root = true;
                    root_error(&element)?;
                }
                depth += 1;
                visit(Step::Open { element, empty: false })?;
            }
            Event::Empty(start) => {
                let element = Element::from_start(ns, &start)?;
                if depth == 0 {
                    saw_root = true;
                    root_error(&element)?;
                }
                visit(Step::Open { element, empty: true })?;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                visit(Step::Close)?;
            }
            Event::Text(text) if depth > 0 => visit(Step::Text(text.xml10_content().into_owned()))?,
            Event::CData(data) if depth > 0 => visit(Step::Text(data.xml10_content().into_owned()))?,
            Event::GeneralRef(reference) if depth > 0 => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => quick_xml::escape::resolve_predefined_entity(&reference)
                        .ok_or_else(|| DocError::Malformed(format!("unknown entity &{};", &*reference)))?
                        .to_string(),
                    Err(e) => return Err(DocError::Malformed(format!("bad character reference: {e}"))),
                };
                visit(Step::Text(resolved))?;
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if depth > 0 {
        return Err(DocError::Malformed("the document ends before its elements close".into()));
    }
    if !saw_root {
        return Err(DocError::Malformed("the body holds no XML element".into()));
    }
    Ok(())
}

fn root_error(element: &Element) -> Result<(), DocError> {
    if element.local != "error" {
        return Ok(());
    }
    Err(DocError::Torznab {
        code: element.attr("code").and_then(|c| c.trim().parse().ok()).unwrap_or(900),
        description: element.attr("description").unwrap_or("no description").trim().to_string(),
    })
}

/// Reads only far enough to tell whether `body` is a Torznab error
/// document; used on non-success HTTP answers, whose bodies may be anything.
pub fn error_in(body: &str) -> Option<(u32, String)> {
    match walk(body, |_| Ok(())) {
        Err(DocError::Torznab { code, description }) => Some((code, description)),
        _ => None,
    }
}
