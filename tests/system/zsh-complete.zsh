# What zsh's completion system makes of a command line, in a real interactive zsh on a pseudo-
# terminal (zpty), with packaging/completion/_rocefabctl on its fpath.
# usage: zsh -f zsh-complete.zsh COMPLETION_DIR BIN_DIR LINE PATTERN
# Types LINE and a Tab, then waits (the caller's timeout bounds it) until the terminal shows
# PATTERN; prints what it showed.  Exit 3: the shell never started; 4: no such completion.
zmodload zsh/zpty || exit 2
zpty z zsh -f -i
zpty -w z "PS1='%% '; fpath=($1 \$fpath); PATH=$2:\$PATH; autoload -U compinit; compinit -u -D; print 'RE''ADY'"
zpty -r -m z out '*READY*' || exit 3
zpty -w -n z "$3"$'\t'
zpty -r -m z out "$4" || exit 4
print -r -- "$out"
zpty -d z
