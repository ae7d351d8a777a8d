//! `pincer exec` (a command in exactly the sandbox the agent's shell gets)
//! and `pincer sandbox check` (the escape corpus against this machine).

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::text::terminal_safe;
use pincer_runtime::person::{self, ExecPlan};
use pincer_sandbox::{Exit, Sandbox, SandboxError};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// Run with the network on, as an agent call that asks for it (needs
    /// `[shell] network = "ask"`).
    #[arg(long)]
    network: bool,
    /// The workspace (default: the agent's).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The program and its arguments (after `--`), run directly, no shell.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum SandboxCmd {
    /// Run the escape corpus against this machine's sandbox: every attack
    /// must be refused, and every required layer, made to fail, must stop
    /// the command. Prints one line per layer; exits 1 if anything escaped.
    Check {
        #[arg(long)]
        json: bool,
    },
}

/// The exit status `pincer exec` passes on: the command's, `128 + N` for a
/// signal (as a shell reports it), 125 when the sandbox could not be set up
/// and 127 when the program could not be started (nothing ran).
fn exit_code(e: &Exit) -> ExitCode {
    let code = match *e {
        Exit::Code(c) => c,
        Exit::Signal(s) => 128 + s,
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

pub fn exec(ctx: &Ctx, args: ExecArgs) -> Result<ExitCode> {
    let plan = ExecPlan::new(
        &ctx.home,
        &ctx.settings,
        &ctx.env,
        args.workspace.as_deref(),
        args.command,
        args.network,
    )?;
    let audit = pincer_runtime::open_audit(&ctx.home)?;
    match person::exec(&audit, HUMAN_CLI, plan)? {
        Ok(finished) => {
            for note in finished.notes() {
                eprintln!("pincer exec: {}", terminal_safe(&note));
            }
            Ok(exit_code(&finished.exit))
        }
        Err(e) => {
            eprintln!("error: {}", terminal_safe(&e.to_string()));
            Ok(ExitCode::from(match e {
                SandboxError::Spawn { .. } => 127,
                _ => 125,
            }))
        }
    }
}

pub fn run(ctx: &Ctx, cmd: SandboxCmd) -> Result<ExitCode> {
    match cmd {
        SandboxCmd::Check { json } => {
            let sandbox = Sandbox::current_exe();
            let report = pincer_sandbox::self_test(
                &sandbox,
                &std::env::temp_dir(),
                ctx.env.secrets(&ctx.settings),
            )
            .context("cannot set up the sandbox check's scratch directory")?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
