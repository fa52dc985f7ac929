//! `mongotape completions SHELL` and `mongotape man`: generated from the clap definitions, so
//! they never disagree with `--help`.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Write mongotape.1 and a page per subcommand (mongotape-record.1, ...) into this folder
    /// instead of mongotape.1 on stdout.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "mongotape", &mut out);
    Ok(super::output::text(&String::from_utf8_lossy(&out))?)
}

pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<()> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create --dir {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            Ok(super::output::text(&String::from_utf8_lossy(&out))?)
        }
    }
}
