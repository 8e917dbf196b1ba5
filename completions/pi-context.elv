
use builtin;
use str;

set edit:completion:arg-completer[pi-context] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'pi-context'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'pi-context'= {
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand notes-write 'Create or overwrite a note'
            cand notes-read 'Read a window of a note''s body, with its metadata'
            cand notes-update 'Edit, crumple, smooth, re-origin or rename a note'
            cand notes-list 'List notes, most recently updated first'
            cand notes-search 'Search note bodies for literals, case-insensitively'
            cand project-key 'Print the project key of a directory'
            cand history-windows 'List the reset windows of a session''s active branch'
            cand history-list 'Page through the events of a session'
            cand history-read 'Read one event''s document'
            cand history-search 'Search a session''s events for literals'
            cand boot-render 'Render the boot block for the head of a context window'
            cand budget-check 'Decide the context-budget action from usage and Pi settings'
            cand dream 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)'
            cand dream-fs 'Jailed file operations for the dreamer''s write, edit and delete tools'
            cand doctor 'Check a notes home without changing it'
            cand mcp 'Serve pi-context''s notes (and one Pi session''s history) to an MCP host over stdio'
            cand claude-hook 'Claude Code SessionStart hook: print the boot block as additional context'
            cand sync 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'pi-context;notes-write'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;notes-read'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-cache 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;notes-update'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;notes-list'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-cache 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;notes-search'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;project-key'= {
            cand --cwd 'Directory to key [default: the working directory]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;history-windows'= {
            cand --session 'The Pi session file (JSONL) to read; it is never modified'
            cand --leaf 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-index 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;history-list'= {
            cand --session 'The Pi session file (JSONL) to read; it is never modified'
            cand --leaf 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-index 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;history-read'= {
            cand --session 'The Pi session file (JSONL) to read; it is never modified'
            cand --leaf 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-index 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;history-search'= {
            cand --session 'The Pi session file (JSONL) to read; it is never modified'
            cand --leaf 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-index 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;boot-render'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --window-id 'The window this boot opens [default: the session''s root window id]'
            cand --previous-window-id 'The window active before this one (omit for the root boot)'
            cand --opened-at 'When boot construction began (RFC 3339); every relative age is against it [default: now]'
            cand --max-chars 'Fit the boot text into this many characters (e.g. a host''s context-injection cap): MAP tails and recent-note rows are trimmed visibly; identity and protocol never are'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-cache 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;budget-check'= {
            cand --agent-dir 'Pi''s agent directory holding the global settings.json [default: $PI_CODING_AGENT_DIR, else ~/.pi/agent]'
            cand --cwd 'The project directory whose .pi/settings.json applies [default: the working directory]'
            cand --model 'The active model as <provider>/<id>, selecting compaction.modelOverrides (the request''s "model" wins when both are given)'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --untrusted-project 'Ignore the project''s .pi/settings.json (pass this when Pi reports the project untrusted)'
            cand --settings-only 'Print the resolved settings and thresholds; read nothing from stdin'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;dream'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --dreamer 'Dreamer model pattern for Pi''s `--model` (beats the `pi-context.dreamer` setting)'
            cand --min-sessions 'Material gate: at least this many session homes changed since the last run'
            cand --min-hours 'Time gate: at least this many hours since the last run (decimals allowed)'
            cand --timeout 'End the dreamer after this long and record a failed run (e.g. `90s`, `30m`, `2h`)'
            cand --pi-bin 'The Pi binary; default `$PI_CONTEXT_PI_BIN`, else `pi` on PATH'
            cand --agent-dir 'Pi''s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. Passed to the dreamer as `PI_CODING_AGENT_DIR`'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --force 'Run even when the time or material gate is closed (never bypasses the lock)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;dream-fs'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --journal 'Append this attempt, applied or refused, to this JSONL journal (the dream run''s)'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;doctor'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;mcp'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --session 'A Pi session file (JSONL): enables history_windows, history_list, history_read and history_search over it (never modified)'
            cand --leaf 'With --session: entry id of the leaf whose path is the active branch [default: the file''s last entry]'
            cand --host-state 'Directory where a host hook records the host''s current session (`claude-hook`): each call reads `<DIR>/<parent pid>.json` and, when present, its `session_id` names the session home (it follows /clear; --session-id is only the fallback)'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --no-cache 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal'
            cand --no-index 'With --session: read the whole file instead of using the session index'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;claude-hook'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --session-id 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home'
            cand --cwd 'Directory whose repository names the project home [default: the working directory]'
            cand --project-key 'Use this project key instead of deriving one from --cwd'
            cand --agent 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]'
            cand --model 'Model id; the slug of the part after the last "/" names @model/ [default: default]'
            cand --host-state 'Directory shared with `pi-context mcp --host-state`: the current session is written to `<DIR>/<parent pid>.json`'
            cand --max-chars 'Character budget of the boot block (Claude Code caps hook output at 10,000)'
            cand --tool-prefix 'Prefix of the MCP tool names the boot refers to'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;sync'= {
            cand --notes-home 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]'
            cand --remote 'A Git remote of the notes home, or a URL (path, file://, git://; https:// and ssh:// when built in) [default: pi-context.syncRemote in Pi''s settings, else origin]'
            cand --branch 'The remote branch'
            cand --agent-dir 'Pi''s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`'
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand --adopt-remote 'Accept a remote that was rewritten (force-pushed, recreated): merge into its line and keep the old line under a tag instead of refusing with remote_rewritten'
            cand --include-sessions 'Also sync the session homes pi/session/* (by default they stay on this machine)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;completions'= {
            cand --format 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'pi-context;help'= {
            cand notes-write 'Create or overwrite a note'
            cand notes-read 'Read a window of a note''s body, with its metadata'
            cand notes-update 'Edit, crumple, smooth, re-origin or rename a note'
            cand notes-list 'List notes, most recently updated first'
            cand notes-search 'Search note bodies for literals, case-insensitively'
            cand project-key 'Print the project key of a directory'
            cand history-windows 'List the reset windows of a session''s active branch'
            cand history-list 'Page through the events of a session'
            cand history-read 'Read one event''s document'
            cand history-search 'Search a session''s events for literals'
            cand boot-render 'Render the boot block for the head of a context window'
            cand budget-check 'Decide the context-budget action from usage and Pi settings'
            cand dream 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)'
            cand dream-fs 'Jailed file operations for the dreamer''s write, edit and delete tools'
            cand doctor 'Check a notes home without changing it'
            cand mcp 'Serve pi-context''s notes (and one Pi session''s history) to an MCP host over stdio'
            cand claude-hook 'Claude Code SessionStart hook: print the boot block as additional context'
            cand sync 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'pi-context;help;notes-write'= {
        }
        &'pi-context;help;notes-read'= {
        }
        &'pi-context;help;notes-update'= {
        }
        &'pi-context;help;notes-list'= {
        }
        &'pi-context;help;notes-search'= {
        }
        &'pi-context;help;project-key'= {
        }
        &'pi-context;help;history-windows'= {
        }
        &'pi-context;help;history-list'= {
        }
        &'pi-context;help;history-read'= {
        }
        &'pi-context;help;history-search'= {
        }
        &'pi-context;help;boot-render'= {
        }
        &'pi-context;help;budget-check'= {
        }
        &'pi-context;help;dream'= {
        }
        &'pi-context;help;dream-fs'= {
        }
        &'pi-context;help;doctor'= {
        }
        &'pi-context;help;mcp'= {
        }
        &'pi-context;help;claude-hook'= {
        }
        &'pi-context;help;sync'= {
        }
        &'pi-context;help;completions'= {
        }
        &'pi-context;help;help'= {
        }
    ]
    $completions[$command]
}
