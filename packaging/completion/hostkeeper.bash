# bash completion for hostkeeper                          -*- shell-script -*-

_hostkeeper() {
    local cur prev words cword
    _init_completion || return

    local commands="status flush start stop setup import doctor discover"
    local global="--socket --timeout --help --version"
    case $prev in
        --socket)
            _filedir
            return
            ;;
        --timeout)
            return
            ;;
    esac

    local i command=
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket | --timeout) ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done

    local options
    case $command in
        "") options="$commands $global" ;;
        status) options="--json --help" ;;
        setup) options="--terraform --opentofu --dry-run --undo --help" ;;
        import) options="--keep-file --help" ;;
        discover) options="--json --refresh --help modules.v1 providers.v1 login.v1" ;;
        flush | start | stop | doctor) options="--help" ;;
    esac
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
} && complete -F _hostkeeper hostkeeper
