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
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create --dir {}", dir.display()))?;
            let mut pages = vec![cmd.clone()];
            pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
            for page in pages {
                let man = clap_mangen::Man::new(page.clone());
                let path = dir.join(man.get_filename());
                std::fs::write(&path, page_text(&man, &page)?)
                    .with_context(|| format!("cannot write the manual page {}", path.display()))?;
            }
            Ok(())
        }
        None => {
            let man = clap_mangen::Man::new(cmd.clone());
            Ok(super::output::text(&page_text(&man, &cmd)?)?)
        }
    }
}

/// A page as clap_mangen renders it, with two things it leaves out: the examples kept as written
/// (not reflowed mid-command: `.nf`), and each option's value name in the SYNOPSIS.
fn page_text(man: &clap_mangen::Man, cmd: &clap::Command) -> anyhow::Result<String> {
    let mut out = Vec::new();
    man.render(&mut out)?;
    let mut roff = String::from_utf8_lossy(&out).into_owned();
    if let Some(at) = roff.find(".SH EXTRA\n") {
        let body = at + ".SH EXTRA\n".len();
        let end = roff[body..]
            .find("\n.SH ")
            .map_or(roff.len(), |e| body + e + 1);
        roff.insert_str(end, ".fi\n");
        roff.insert_str(body, ".nf\n");
    }
    Ok(with_value_names(roff, cmd))
}

/// `[--speed]` -> `[--speed SPEED]` in the SYNOPSIS line, for every option that takes a value.
fn with_value_names(roff: String, cmd: &clap::Command) -> String {
    let Some(start) = roff
        .find(".SH SYNOPSIS\n")
        .map(|s| s + ".SH SYNOPSIS\n".len())
    else {
        return roff;
    };
    let end = roff[start..].find('\n').map_or(roff.len(), |e| start + e);
    let mut synopsis = roff[start..end].to_owned();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if !arg.get_action().takes_values() {
            continue;
        }
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.to_string());
        let written = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
        let named = format!("{written} \\fI{value}\\fR");
        for close in [']', '>'] {
            synopsis = synopsis.replace(&format!("{written}{close}"), &format!("{named}{close}"));
        }
    }
    format!("{}{synopsis}{}", &roff[..start], &roff[end..])
}
