# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_pi_context_global_optspecs
    string join \n format= h/help V/version
end

function __fish_pi_context_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_pi_context_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_pi_context_using_subcommand
    set -l cmd (__fish_pi_context_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c pi-context -n "__fish_pi_context_needs_command" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_needs_command" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "notes-write" -d 'Create or overwrite a note'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "notes-read" -d 'Read a window of a note\'s body, with its metadata'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "notes-update" -d 'Edit, crumple, smooth, re-origin or rename a note'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "notes-list" -d 'List notes, most recently updated first'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "notes-search" -d 'Search note bodies for literals, case-insensitively'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "project-key" -d 'Print the project key of a directory'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "history-windows" -d 'List the reset windows of a session\'s active branch'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "history-list" -d 'Page through the events of a session'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "history-read" -d 'Read one event\'s document'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "history-search" -d 'Search a session\'s events for literals'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "boot-render" -d 'Render the boot block for the head of a context window'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "budget-check" -d 'Decide the context-budget action from usage and Pi settings'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "dream" -d 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "dream-fs" -d 'Jailed file operations for the dreamer\'s write, edit and delete tools'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "doctor" -d 'Check a notes home without changing it'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "mcp" -d 'Serve pi-context\'s notes (and one Pi session\'s history) to an MCP host over stdio'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "claude-hook" -d 'Claude Code SessionStart hook: print the boot block as additional context'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "sync" -d 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c pi-context -n "__fish_pi_context_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-write" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -l no-cache -d 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-read" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-update" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -l no-cache -d 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-list" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand notes-search" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand project-key" -l cwd -d 'Directory to key [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand project-key" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand project-key" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand project-key" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -l session -d 'The Pi session file (JSONL) to read; it is never modified' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -l leaf -d 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file\'s last entry, which is what Pi shows when it reopens the file]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -l no-index -d 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-windows" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -l session -d 'The Pi session file (JSONL) to read; it is never modified' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -l leaf -d 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file\'s last entry, which is what Pi shows when it reopens the file]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -l no-index -d 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-list" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -l session -d 'The Pi session file (JSONL) to read; it is never modified' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -l leaf -d 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file\'s last entry, which is what Pi shows when it reopens the file]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -l no-index -d 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-read" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -l session -d 'The Pi session file (JSONL) to read; it is never modified' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -l leaf -d 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file\'s last entry, which is what Pi shows when it reopens the file]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -l no-index -d 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand history-search" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l window-id -d 'The window this boot opens [default: the session\'s root window id]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l previous-window-id -d 'The window active before this one (omit for the root boot)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l opened-at -d 'When boot construction began (RFC 3339); every relative age is against it [default: now]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l max-chars -d 'Fit the boot text into this many characters (e.g. a host\'s context-injection cap): MAP tails and recent-note rows are trimmed visibly; identity and protocol never are' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -l no-cache -d 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand boot-render" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l agent-dir -d 'Pi\'s agent directory holding the global settings.json [default: $PI_CODING_AGENT_DIR, else ~/.pi/agent]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l cwd -d 'The project directory whose .pi/settings.json applies [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l model -d 'The active model as <provider>/<id>, selecting compaction.modelOverrides (the request\'s "model" wins when both are given)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l untrusted-project -d 'Ignore the project\'s .pi/settings.json (pass this when Pi reports the project untrusted)'
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -l settings-only -d 'Print the resolved settings and thresholds; read nothing from stdin'
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand budget-check" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l dreamer -d 'Dreamer model pattern for Pi\'s `--model` (beats the `pi-context.dreamer` setting)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l min-sessions -d 'Material gate: at least this many session homes changed since the last run' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l min-hours -d 'Time gate: at least this many hours since the last run (decimals allowed)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l timeout -d 'End the dreamer after this long and record a failed run (e.g. `90s`, `30m`, `2h`)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l pi-bin -d 'The Pi binary; default `$PI_CONTEXT_PI_BIN`, else `pi` on PATH' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l agent-dir -d 'Pi\'s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. Passed to the dreamer as `PI_CODING_AGENT_DIR`' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -l force -d 'Run even when the time or material gate is closed (never bypasses the lock)'
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand dream" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand dream-fs" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand dream-fs" -l journal -d 'Append this attempt, applied or refused, to this JSONL journal (the dream run\'s)' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand dream-fs" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand dream-fs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand dream-fs" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand doctor" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand doctor" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l session -d 'A Pi session file (JSONL): enables history_windows, history_list, history_read and history_search over it (never modified)' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l leaf -d 'With --session: entry id of the leaf whose path is the active branch [default: the file\'s last entry]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l host-state -d 'Directory where a host hook records the host\'s current session (`claude-hook`): each call reads `<DIR>/<parent pid>.json` and, when present, its `session_id` names the session home (it follows /clear; --session-id is only the fallback)' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l no-cache -d 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -l no-index -d 'With --session: read the whole file instead of using the session index'
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand mcp" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l session-id -d 'Pi session id: names this session\'s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l cwd -d 'Directory whose repository names the project home [default: the working directory]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l project-key -d 'Use this project key instead of deriving one from --cwd' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l agent -d 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l model -d 'Model id; the slug of the part after the last "/" names @model/ [default: default]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l host-state -d 'Directory shared with `pi-context mcp --host-state`: the current session is written to `<DIR>/<parent pid>.json`' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l max-chars -d 'Character budget of the boot block (Claude Code caps hook output at 10,000)' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l tool-prefix -d 'Prefix of the MCP tool names the boot refers to' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand claude-hook" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l notes-home -d 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l remote -d 'A Git remote of the notes home, or a URL (path, file://, git://; https:// and ssh:// when built in) [default: pi-context.syncRemote in Pi\'s settings, else origin]' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l branch -d 'The remote branch' -r
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l agent-dir -d 'Pi\'s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`' -r -F
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l adopt-remote -d 'Accept a remote that was rewritten (force-pushed, recreated): merge into its line and keep the old line under a tag instead of refusing with remote_rewritten'
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -l include-sessions -d 'Also sync the session homes pi/session/* (by default they stay on this machine)'
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand sync" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand completions" -l format -d 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)' -r -f -a "json\t'The JSON envelope on one line'
text\t'The model-facing text'
both\t'The JSON envelope with an added top-level `"text"` field holding the model-facing text'"
complete -c pi-context -n "__fish_pi_context_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi-context -n "__fish_pi_context_using_subcommand completions" -s V -l version -d 'Print version'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "notes-write" -d 'Create or overwrite a note'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "notes-read" -d 'Read a window of a note\'s body, with its metadata'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "notes-update" -d 'Edit, crumple, smooth, re-origin or rename a note'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "notes-list" -d 'List notes, most recently updated first'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "notes-search" -d 'Search note bodies for literals, case-insensitively'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "project-key" -d 'Print the project key of a directory'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "history-windows" -d 'List the reset windows of a session\'s active branch'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "history-list" -d 'Page through the events of a session'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "history-read" -d 'Read one event\'s document'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "history-search" -d 'Search a session\'s events for literals'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "boot-render" -d 'Render the boot block for the head of a context window'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "budget-check" -d 'Decide the context-budget action from usage and Pi settings'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "dream" -d 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "dream-fs" -d 'Jailed file operations for the dreamer\'s write, edit and delete tools'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "doctor" -d 'Check a notes home without changing it'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "mcp" -d 'Serve pi-context\'s notes (and one Pi session\'s history) to an MCP host over stdio'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "claude-hook" -d 'Claude Code SessionStart hook: print the boot block as additional context'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "sync" -d 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c pi-context -n "__fish_pi_context_using_subcommand help; and not __fish_seen_subcommand_from notes-write notes-read notes-update notes-list notes-search project-key history-windows history-list history-read history-search boot-render budget-check dream dream-fs doctor mcp claude-hook sync completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
