//! `cmautobuy-client`: the executor's command line. Parses the arguments, runs the one
//! command (`cli/<command>.rs`) and maps its outcome to the exit code in one place
//! (`cli/exit.rs`, where every exit code is listed).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::exit::exit_code(cli::Cli::parse().run())
}
