//! Prints what `release.inspect` reads from each name given on the command
//! line, as JSON: `cargo run -p cap-release-inspect --example inspect -- NAME...`

fn main() {
    for name in std::env::args().skip(1) {
        let info = cap_release_inspect::parse::inspect(&name);
        println!("{name}\n  {}", serde_json::to_string(&info).unwrap());
    }
}
