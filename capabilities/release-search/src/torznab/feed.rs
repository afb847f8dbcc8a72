//! Search results: an RSS 2.0 feed whose `<item>`s carry `torznab:attr`
//! elements. Attributes are recognised by namespace URI, never by the
//! prefix a feed happens to use; newznab's namespace is accepted too since
//! some indexers answer Torznab requests with it. A tracker's own feed
//! (ezRSS, nyaa) gives its hash, seeds and length in elements of its own.

use super::xml::{DocError, Element, Step, walk};

const TORZNAB_NS: &str = "http://torznab.com/schemas/2015/feed";
const NEWZNAB_NS: &str = "http://www.newznab.com/DTD/2010/feeds/attributes/";
/// Trackers' own feeds write the hash and the swarm's size in elements of
/// these namespaces (ezRSS, nyaa), read as the Torznab attributes they mean.
const EZRSS_NS: &str = "http://xmlns.ezrss.it/0.1/";
const NYAA_NS: &str = "https://nyaa.si/xmlns/nyaa";

/// One `<item>` as written, before any interpretation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedItem {
    pub title: String,
    pub guid: Option<String>,
    pub link: Option<String>,
    pub comments: Option<String>,
    pub pub_date: Option<String>,
    /// The plain `<size>` element some feeds carry besides the attribute.
    pub size: Option<String>,
    pub enclosure_url: Option<String>,
    pub enclosure_length: Option<String>,
    /// `torznab:attr` name/value pairs in order; names lowercased.
    /// `category` may repeat.
    pub attrs: Vec<(String, String)>,
}

impl FeedItem {
    /// The first value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
    }

    /// Every value of attribute `name`.
    pub fn attrs_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.attrs.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.trim())
    }
}

/// Which plain child of `<item>` text is being collected for.
#[derive(Clone, Copy)]
enum Field {
    Title,
    Guid,
    Link,
    Comments,
    PubDate,
    Size,
    /// An element read as the Torznab attribute it names.
    Attr(&'static str),
}

fn field(element: &Element) -> Option<Field> {
    if let Some(namespace) = element.namespace.as_deref() {
        let attr = match (namespace, element.local.as_str()) {
            (EZRSS_NS | NYAA_NS, "infoHash") => "infohash",
            (EZRSS_NS, "magnetURI") => "magneturl",
            (EZRSS_NS, "contentLength") => "size",
            (EZRSS_NS, "seeds") | (NYAA_NS, "seeders") => "seeders",
            (NYAA_NS, "leechers") => "leechers",
            _ => return None,
        };
        return Some(Field::Attr(attr));
    }
    Some(match element.local.as_str() {
        "title" => Field::Title,
        "guid" => Field::Guid,
        "link" => Field::Link,
        "comments" => Field::Comments,
        "pubDate" => Field::PubDate,
        "size" => Field::Size,
        _ => return None,
    })
}

fn store(item: &mut FeedItem, field: Field, text: String) {
    let text = text.trim().to_string();
    if text.is_empty() {
        return;
    }
    match field {
        Field::Title => item.title = text,
        Field::Guid => item.guid = Some(text),
        Field::Link => item.link = Some(text),
        Field::Comments => item.comments = Some(text),
        Field::PubDate => item.pub_date = Some(text),
        Field::Size => item.size = Some(text),
        Field::Attr(name) => item.attrs.push((name.to_string(), text)),
    }
}

/// Parses a search answer into its items, in feed order.
pub fn parse(body: &str) -> Result<Vec<FeedItem>, DocError> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut item: Option<(usize, FeedItem)> = None;
    let mut collecting: Option<(usize, Field, String)> = None;
    walk(body, |step| {
        match step {
            Step::Open { element, empty } => {
                if depth == 0 && element.local != "rss" {
                    return Err(DocError::Malformed(format!("expected an RSS feed, got <{}>", element.local)));
                }
                if let Some((item_depth, current)) = item.as_mut()
                    && depth == *item_depth + 1
                {
                    let is_attr = element.local == "attr"
                        && matches!(element.namespace.as_deref(), Some(TORZNAB_NS | NEWZNAB_NS));
                    if is_attr {
                        if let (Some(name), Some(value)) = (element.attr("name"), element.attr("value")) {
                            current.attrs.push((name.trim().to_ascii_lowercase(), value.to_string()));
                        }
                    } else if element.local == "enclosure" && element.namespace.is_none() {
                        current.enclosure_url = element.attr("url").map(str::to_string);
                        current.enclosure_length = element.attr("length").map(str::to_string);
                    } else if let Some(field) = field(&element)
                        && !empty
                    {
                        collecting = Some((depth, field, String::new()));
                    }
                }
                if element.local == "item" && element.namespace.is_none() && item.is_none() && !empty {
                    item = Some((depth, FeedItem::default()));
                }
                if !empty {
                    depth += 1;
                }
            }
            Step::Text(text) => {
                if let Some((_, _, buffer)) = collecting.as_mut() {
                    buffer.push_str(&text);
                }
            }
            Step::Close => {
                depth = depth.saturating_sub(1);
                if let Some((_, field, text)) = collecting.take_if(|(at, _, _)| *at == depth)
                    && let Some((_, current)) = item.as_mut()
                {
                    store(current, field, text);
                }
                if let Some((_, finished)) = item.take_if(|(at, _)| *at == depth) {
                    items.push(finished);
                }
            }
        }
        Ok(())
    })?;
    Ok(items)
}
