//! Command-line parsing for the simulated `/system/bin/sh`.
//!
//! **Invariant: nothing a caller sends is ever executed as a program.** The line is split
//! into words with POSIX quoting rules; the only operators understood outside quotes are
//! `;` / newline (sequence), `&&`, `||`, `|` between builtins (`dumpsys window | grep
//! mCurrentFocus`) and the redirections `>/dev/null`, `2>/dev/null`, `2>&1`. Every word names a builtin or fails with 127. `$?` is the only expansion (so
//! `cmd; echo __RC=$?` recovers exit codes where the transport loses them); `$(…)`,
//! backticks, globs and every other `$` stay literal text. Other redirections, background
//! jobs and subshells are refused with a syntax error (exit 2).

/// A piece of a word; `$?` is expanded only in unquoted or double-quoted pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub expand: bool,
}

/// One simple command: its words and its redirections.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Simple {
    pub words: Vec<Vec<Piece>>,
    pub stdout_null: bool,
    pub stderr_null: bool,
    pub stderr_to_stdout: bool,
}

/// How a command is joined to the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    Always,
    IfOk,
    IfFailed,
    /// Stdin is the previous command's stdout (`a | b`).
    Pipe,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line {
    pub commands: Vec<(Join, Simple)>,
}

enum Tok {
    Word(Vec<Piece>),
    Op(&'static str),
}

/// Parse a command line. `Err` carries the shell's syntax error message.
pub fn parse(line: &str) -> Result<Line, String> {
    let toks = tokenize(line)?;
    let mut out = Line::default();
    let mut cur = Simple::default();
    let mut join = Join::Always;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Word(w) => cur.words.push(w.clone()),
            Tok::Op(op) => match *op {
                "\n" if cur.words.is_empty() => {}
                ";" | "\n" | "&&" | "||" | "|" => {
                    if cur.words.is_empty() {
                        return Err(format!("syntax error: unexpected '{op}'"));
                    }
                    out.commands.push((join, std::mem::take(&mut cur)));
                    join = match *op {
                        "&&" => Join::IfOk,
                        "||" => Join::IfFailed,
                        "|" => Join::Pipe,
                        _ => Join::Always,
                    };
                }
                ">" | "1>" | "2>" => {
                    let target = match toks.get(i + 1) {
                        Some(Tok::Word(w)) => w.iter().map(|p| p.text.as_str()).collect::<String>(),
                        _ => return Err(format!("syntax error: '{op}' needs a file")),
                    };
                    if target != "/dev/null" {
                        return Err(format!("can't create {target}: redirection not supported"));
                    }
                    if *op == "2>" {
                        cur.stderr_null = true;
                    } else {
                        cur.stdout_null = true;
                    }
                    i += 1;
                }
                "2>&1" => cur.stderr_to_stdout = true,
                other => return Err(format!("syntax error: '{other}' unsupported")),
            },
        }
        i += 1;
    }
    if !cur.words.is_empty() {
        out.commands.push((join, cur));
    } else if join != Join::Always {
        return Err("syntax error: unexpected end of file".into());
    }
    Ok(out)
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let cs: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut word: Vec<Piece> = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    let push_text = |word: &mut Vec<Piece>, c: char, expand: bool| match word.last_mut() {
        Some(p) if p.expand == expand => p.text.push(c),
        _ => word.push(Piece {
            text: c.to_string(),
            expand,
        }),
    };
    macro_rules! end_word {
        () => {
            if in_word {
                toks.push(Tok::Word(std::mem::take(&mut word)));
                in_word = false;
            }
        };
    }
    while i < cs.len() {
        let c = cs[i];
        match c {
            ' ' | '\t' => {
                end_word!();
            }
            '\n' => {
                end_word!();
                toks.push(Tok::Op("\n"));
            }
            ';' => {
                end_word!();
                toks.push(Tok::Op(";"));
            }
            '&' => {
                end_word!();
                if cs.get(i + 1) == Some(&'&') {
                    toks.push(Tok::Op("&&"));
                    i += 1;
                } else {
                    toks.push(Tok::Op("&"));
                }
            }
            '|' => {
                end_word!();
                if cs.get(i + 1) == Some(&'|') {
                    toks.push(Tok::Op("||"));
                    i += 1;
                } else {
                    toks.push(Tok::Op("|"));
                }
            }
            '>' | '<' => {
                // "2>&1", "2>", "1>" when the digit is a word of its own.
                let fd = if in_word
                    && word.len() == 1
                    && word[0].expand
                    && (word[0].text == "2" || word[0].text == "1")
                {
                    let d = word[0].text.clone();
                    word.clear();
                    in_word = false;
                    Some(d)
                } else {
                    end_word!();
                    None
                };
                if c == '<' {
                    toks.push(Tok::Op("<"));
                } else if cs.get(i + 1) == Some(&'&') {
                    let tgt = cs.get(i + 2).copied();
                    if fd.as_deref() == Some("2") && tgt == Some('1') {
                        toks.push(Tok::Op("2>&1"));
                        i += 2;
                    } else {
                        toks.push(Tok::Op(">&"));
                        i += 1;
                    }
                } else if cs.get(i + 1) == Some(&'>') {
                    toks.push(Tok::Op(">>"));
                    i += 1;
                } else {
                    toks.push(Tok::Op(match fd.as_deref() {
                        Some("2") => "2>",
                        Some("1") => "1>",
                        _ => ">",
                    }));
                }
            }
            '(' | ')' => {
                end_word!();
                toks.push(Tok::Op(if c == '(' { "(" } else { ")" }));
            }
            '\'' => {
                in_word = true;
                let start = i + 1;
                let Some(end) = cs[start..].iter().position(|&x| x == '\'') else {
                    return Err("syntax error: unterminated quoted string".into());
                };
                if end == 0 {
                    word.push(Piece {
                        text: String::new(),
                        expand: false,
                    });
                }
                for &x in &cs[start..start + end] {
                    push_text(&mut word, x, false);
                }
                i = start + end;
            }
            '"' => {
                in_word = true;
                let mut j = i + 1;
                let mut any = false;
                loop {
                    let Some(&x) = cs.get(j) else {
                        return Err("syntax error: unterminated quoted string".into());
                    };
                    match x {
                        '"' => break,
                        '\\' if matches!(cs.get(j + 1), Some('"' | '\\' | '$' | '`' | '\n')) => {
                            // Escaped characters are literal: "\$?" is not expanded.
                            push_text(&mut word, cs[j + 1], false);
                            j += 1;
                        }
                        _ => push_text(&mut word, x, true),
                    }
                    any = true;
                    j += 1;
                }
                if !any {
                    word.push(Piece {
                        text: String::new(),
                        expand: false,
                    });
                }
                i = j;
            }
            '\\' => {
                in_word = true;
                if let Some(&x) = cs.get(i + 1) {
                    if x != '\n' {
                        push_text(&mut word, x, false);
                    }
                    i += 1;
                }
            }
            '#' if !in_word => {
                // Comment to end of line.
                while i < cs.len() && cs[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            _ => {
                in_word = true;
                push_text(&mut word, c, true);
            }
        }
        i += 1;
    }
    if in_word {
        toks.push(Tok::Word(word));
    }
    Ok(toks)
}

/// Render a word, expanding `$?` in expandable pieces to `last_status`.
pub fn render(word: &[Piece], last_status: i32) -> String {
    let mut s = String::new();
    for p in word {
        if p.expand {
            s.push_str(&p.text.replace("$?", &last_status.to_string()));
        } else {
            s.push_str(&p.text);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Vec<String>> {
        parse(line)
            .expect("parses")
            .commands
            .iter()
            .map(|(_, c)| c.words.iter().map(|w| render(w, 7)).collect())
            .collect()
    }

    #[test]
    fn quotes_keep_metacharacters_literal() {
        assert_eq!(
            argv("am start -d 'https://x/?a=1;rm -rf /&b=$(id)`id`'"),
            vec![vec![
                "am",
                "start",
                "-d",
                "https://x/?a=1;rm -rf /&b=$(id)`id`"
            ]]
        );
        assert_eq!(
            argv(r#"echo "a\"b" 'c''d'"#),
            vec![vec!["echo", "a\"b", "cd"]]
        );
    }

    #[test]
    fn rc_suffix_is_expanded_only_where_sh_would() {
        assert_eq!(
            argv("false ; echo __RC=$?"),
            vec![vec!["false"], vec!["echo", "__RC=7"]]
        );
        assert_eq!(
            argv("echo '$?' \"$?\" \\$?"),
            vec![vec!["echo", "$?", "7", "$?"]]
        );
    }

    #[test]
    fn unsupported_constructs_are_syntax_errors() {
        assert!(parse("ls |").is_err());
        assert!(parse("sleep 1 &").is_err());
        assert!(parse("echo > /sdcard/x").is_err());
        assert!(parse("echo 'unterminated").is_err());
        assert!(parse("(id)").is_err());
        let l = parse("uiautomator dump /dev/tty 2>&1 >/dev/null").expect("ok");
        assert!(l.commands[0].1.stderr_to_stdout && l.commands[0].1.stdout_null);
    }

    #[test]
    fn dollar_paren_unquoted_is_literal_word() {
        // $(...) would be a subshell in sh; here "(" is refused before anything runs.
        assert!(parse("echo $(id)").is_err());
        assert_eq!(argv("echo $HOME"), vec![vec!["echo", "$HOME"]]);
    }
}
