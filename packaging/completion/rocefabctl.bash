# bash completion for rocefabctl: its commands (from rocefabctl --list-commands), its options,
# and files for the options that take one.  Installed as
# /usr/share/bash-completion/completions/rocefabctl.
_rocefabctl() {
	local cur prev words cword i cmd=""
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	case "$prev" in
	-t | --token-file | --cacert)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	-s | --server | -w | --watch | --reason | --host | --device | --from | --to | --step | \
		--agent | --port | --window | --op | --size | --max-targets)
		return
		;;
	--state)
		COMPREPLY=($(compgen -W "up down init unknown active cleared pending sent applied failed timed_out" -- "$cur"))
		return
		;;
	esac
	for ((i = 1; i < COMP_CWORD; i++)); do
		case "${COMP_WORDS[i]}" in
		-s | -t | -w | --server | --token-file | --cacert | --watch | --reason | --host | --device | \
			--from | --to | --step | --agent | --port | --window | --op | --size | --max-targets | --state)
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
		COMPREPLY=($(compgen -W "--server --token-file --cacert --json --watch --reason --wait
			--max-targets --all --host --device --state --from --to --step --window --op --size
			--agent --port --help --version" -- "$cur"))
	elif [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$(rocefabctl --list-commands 2> /dev/null) help" -- "$cur"))
	elif [ "$cmd" = help ] || [ "$cmd" = set ] && [ "$i" -eq $((COMP_CWORD - 1)) ]; then
		if [ "$cmd" = set ]; then
			COMPREPLY=($(compgen -W "dcqcn ecn pfc" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(rocefabctl --list-commands 2> /dev/null)" -- "$cur"))
		fi
	fi
}
complete -F _rocefabctl rocefabctl
