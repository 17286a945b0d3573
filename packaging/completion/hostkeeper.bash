# bash completion for hostkeeper                          -*- shell-script -*-

_hostkeeper() {
    local cur prev words cword
    _init_completion || return

    local commands="status flush start stop setup import doctor unlock migrate discover module provider list check rotate login exec token"
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

    local i command= subcommand=
    for ((i = 1; i < cword; i++)); do
        # exec: what follows "--" is COMMAND [ARGS...], completed as a command line.
        if [[ $command == exec && ${words[i]} == -- ]]; then
            _command_offset $((i + 1))
            return
        fi
        case ${words[i]} in
            --socket | --timeout | --constraint | --mirror | --platform | --output | -o | --to | --host | --tfe) ((i++)) ;;
            -*) ;;
            *)
                if [[ -z $command ]]; then
                    command=${words[i]}
                    [[ $command == module || $command == provider || $command == exec ]] || break
                elif [[ $command != exec ]]; then
                    subcommand=${words[i]}
                    break
                fi
                ;;
        esac
    done
    case $prev in
        --constraint | --mirror | --host | --tfe) return ;;
        --output | -o)
            _filedir -d
            return
            ;;
        --to)
            COMPREPLY=($(compgen -W "pass secret-service" -- "$cur"))
            return
            ;;
        --platform)
            COMPREPLY=($(compgen -W "linux_amd64 linux_arm64 linux_386 linux_arm darwin_amd64 darwin_arm64 windows_amd64 windows_386 freebsd_amd64" -- "$cur"))
            return
            ;;
    esac

    local options
    case $command in
        "") options="$commands $global" ;;
        status) options="--json --help" ;;
        setup) options="--terraform --opentofu --dry-run --undo --restore-tokens --registry-cache --git --docker --help" ;;
        import) options="--keep-file --help" ;;
        migrate) options="--to --help" ;;
        discover) options="--json --refresh --help modules.v1 providers.v1 login.v1" ;;
        module)
            case $subcommand in
                "") options="versions download --help" ;;
                versions) options="--constraint --json --refresh --help" ;;
                download) options="--json --refresh --help" ;;
            esac
            ;;
        provider)
            case $subcommand in
                "") options="versions package fetch --help" ;;
                versions) options="--constraint --mirror --direct --json --refresh --help" ;;
                package) options="--platform --mirror --direct --json --refresh --help" ;;
                fetch) options="--platform --mirror --direct --output -o --json --refresh --help" ;;
            esac
            ;;
        list) options="--json --help" ;;
        check) options="--json --help" ;;
        rotate) options="--json --help" ;;
        login) options="--no-browser --wait --refresh --help" ;;
        exec) options="--host --tfe -- --help" ;;
        token) options="--force --help" ;;
        flush | start | stop | doctor | unlock) options="--help" ;;
    esac
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
} && complete -F _hostkeeper hostkeeper
