//! Capstan's foundations, the lowest layer, used by every crate above:
//! the text rules shared by the API and the sandbox ([`text`]), canonical
//! JSON and its digests ([`canonical`]), the principal strings that name
//! who acted ([`principal`]), the database pool with its migrations
//! ([`store`]), and the tasks a service starts for itself and ends when it
//! is closed ([`background`]).

pub mod background;
pub mod canonical;
pub mod principal;
pub mod store;
pub mod text;
