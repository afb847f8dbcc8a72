//! The migrations are embedded by `sqlx::migrate!` (`store`): a new file
//! must rebuild the crate even when no Rust source changed.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
