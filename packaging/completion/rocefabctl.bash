# bash completion for rocefabctl: its commands (from rocefabctl --list-commands), help's
# commands, set's kinds, cc's subcommands, settings-log's settings, its options, the values of those that take a few,
# and files for those that take one.  Installed as
# /usr/share/bash-completion/completions/rocefabctl.
_rocefabctl() {
	local cur prev words cword i cmd=""
	# the rocefabctl being completed (build/rocefabctl, say), not only the one on PATH
	local prog=${COMP_WORDS[0]/#\~/$HOME}
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	case "$prev" in
	-t | --token-file | --cacert)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	-s | --server | -w | --watch | --reason | --host | --device | --from | --to | --step | \
		--agent | --port | --window | --size | --max-targets | --limit | --batch)
		return
		;;
	--op)
		COMPREPLY=($(compgen -W "write read send cas faa ud udp tcp" -- "$cur"))
		return
		;;
	--priority)
		COMPREPLY=($(compgen -W "0 1 2 3 4 5 6 7" -- "$cur"))
		return
		;;
	--state)
		COMPREPLY=($(compgen -W "up down init unknown active cleared pending sent applied failed timed_out in_doubt" -- "$cur"))
		return
		;;
	esac
	for ((i = 1; i < COMP_CWORD; i++)); do
		case "${COMP_WORDS[i]}" in
		-s | -t | -w | --server | --token-file | --cacert | --watch | --reason | --host | --device | \
			--from | --to | --step | --agent | --port | --window | --op | --size | --max-targets | \
			--state | --priority | --limit | --batch)
			((i++))
			;;
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	if [[ "$cur" == -* ]]; then
		# the options every command takes, and after a command its own (rocefabctl refuses
		# the others); before one, --version
		local own=--version
		[ -n "$cmd" ] && own=$("$prog" --list-options "$cmd" 2> /dev/null)
		COMPREPLY=($(compgen -W "--server --token-file --cacert --json --watch --help $own" -- "$cur"))
	elif [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$("$prog" --list-commands 2> /dev/null) help" -- "$cur"))
	elif [ "$i" -eq $((COMP_CWORD - 1)) ]; then
		case "$cmd" in
		help) COMPREPLY=($(compgen -W "$("$prog" --list-commands 2> /dev/null)" -- "$cur")) ;;
		set) COMPREPLY=($(compgen -W "dcqcn ecn pfc" -- "$cur")) ;;
		cc) COMPREPLY=($(compgen -W "status proposals history rollback policy apply reject" -- "$cur")) ;;
		detector) COMPREPLY=($(compgen -W "config" -- "$cur")) ;;
		settings-log) COMPREPLY=($(compgen -W "cc/policy detector/config probes/config" -- "$cur")) ;;
		esac
	fi
}
complete -F _rocefabctl rocefabctl
