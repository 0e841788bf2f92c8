//! The `wheel-server` binary: the server's code is its library
//! (`src/lib.rs`), which the fuzz targets share.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

fn main() -> std::process::ExitCode {
    wheel_server::main()
}
