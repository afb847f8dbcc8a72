//! `t=caps`: which search functions an indexer offers and which parameters
//! each accepts, so a search sends only what the indexer understands.

use super::xml::{DocError, Step, walk};

/// One search function of the caps document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchMode {
    pub available: bool,
    /// Parameter names as the caps list them (`q`, `imdbid`, `season`, ...),
    /// lowercased.
    pub params: Vec<String>,
}

impl SearchMode {
    /// Whether the function is offered and takes `param`.
    pub fn supports(&self, param: &str) -> bool {
        self.available && self.params.iter().any(|p| p == param)
    }
}

/// What an indexer says it can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    pub search: SearchMode,
    pub tv_search: SearchMode,
    pub movie_search: SearchMode,
}

impl Default for Caps {
    /// Every Torznab indexer must offer `t=search&q=`; nothing else is safe
    /// to assume.
    fn default() -> Self {
        Caps {
            search: SearchMode { available: true, params: vec!["q".into()] },
            tv_search: SearchMode::default(),
            movie_search: SearchMode::default(),
        }
    }
}

fn mode(element: &super::xml::Element) -> SearchMode {
    // An element without `available` is listed, so it is offered.
    let available = element.attr("available").is_none_or(|a| a.trim().eq_ignore_ascii_case("yes"));
    let params = element
        .attr("supportedParams")
        .unwrap_or("q")
        .split(',')
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty())
        .collect();
    SearchMode { available, params }
}

/// Parses a caps document. A caps without `<searching>` gets the defaults.
pub fn parse(body: &str) -> Result<Caps, DocError> {
    let mut caps = Caps::default();
    let mut path: Vec<String> = Vec::new();
    walk(body, |step| {
        match step {
            Step::Open { element, empty } => {
                if path.is_empty() && element.local != "caps" {
                    return Err(DocError::Malformed(format!("expected a <caps> document, got <{}>", element.local)));
                }
                if path.len() == 2 && path[1] == "searching" {
                    match element.local.as_str() {
                        "search" => caps.search = mode(&element),
                        "tv-search" => caps.tv_search = mode(&element),
                        "movie-search" => caps.movie_search = mode(&element),
                        _ => {}
                    }
                }
                if !empty {
                    path.push(element.local);
                }
            }
            Step::Close => {
                path.pop();
            }
            Step::Text(_) => {}
        }
        Ok(())
    })?;
    Ok(caps)
}
