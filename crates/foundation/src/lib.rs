//! Capstan's foundations, the lowest layer, used by every crate above:
//! the text rules shared by the API and the sandbox ([`text`]), canonical
//! JSON and its digests ([`canonical`]), the principal strings that name
//! who acted ([`principal`]), the database pool with its migrations
//! ([`store`]), the tasks a service starts for itself and ends when it
//! is closed ([`background`]), and reading a dropped-in file within a cap
//! ([`files`]).

pub mod background;
pub mod canonical;
pub mod files;
pub mod principal;
pub mod store;
pub mod text;
