
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'pi-context' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'pi-context'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'pi-context' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('notes-write', 'notes-write', [CompletionResultType]::ParameterValue, 'Create or overwrite a note')
            [CompletionResult]::new('notes-read', 'notes-read', [CompletionResultType]::ParameterValue, 'Read a window of a note''s body, with its metadata')
            [CompletionResult]::new('notes-update', 'notes-update', [CompletionResultType]::ParameterValue, 'Edit, crumple, smooth, re-origin or rename a note')
            [CompletionResult]::new('notes-list', 'notes-list', [CompletionResultType]::ParameterValue, 'List notes, most recently updated first')
            [CompletionResult]::new('notes-search', 'notes-search', [CompletionResultType]::ParameterValue, 'Search note bodies for literals, case-insensitively')
            [CompletionResult]::new('project-key', 'project-key', [CompletionResultType]::ParameterValue, 'Print the project key of a directory')
            [CompletionResult]::new('history-windows', 'history-windows', [CompletionResultType]::ParameterValue, 'List the reset windows of a session''s active branch')
            [CompletionResult]::new('history-list', 'history-list', [CompletionResultType]::ParameterValue, 'Page through the events of a session')
            [CompletionResult]::new('history-read', 'history-read', [CompletionResultType]::ParameterValue, 'Read one event''s document')
            [CompletionResult]::new('history-search', 'history-search', [CompletionResultType]::ParameterValue, 'Search a session''s events for literals')
            [CompletionResult]::new('boot-render', 'boot-render', [CompletionResultType]::ParameterValue, 'Render the boot block for the head of a context window')
            [CompletionResult]::new('budget-check', 'budget-check', [CompletionResultType]::ParameterValue, 'Decide the context-budget action from usage and Pi settings')
            [CompletionResult]::new('dream', 'dream', [CompletionResultType]::ParameterValue, 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)')
            [CompletionResult]::new('dream-fs', 'dream-fs', [CompletionResultType]::ParameterValue, 'Jailed file operations for the dreamer''s write, edit and delete tools')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check a notes home without changing it')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve pi-context''s notes (and one Pi session''s history) to an MCP host over stdio')
            [CompletionResult]::new('claude-hook', 'claude-hook', [CompletionResultType]::ParameterValue, 'Claude Code SessionStart hook: print the boot block as additional context')
            [CompletionResult]::new('sync', 'sync', [CompletionResultType]::ParameterValue, 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'pi-context;notes-write' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;notes-read' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;notes-update' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;notes-list' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;notes-search' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;project-key' {
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory to key [default: the working directory]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;history-windows' {
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The Pi session file (JSONL) to read; it is never modified')
            [CompletionResult]::new('--leaf', '--leaf', [CompletionResultType]::ParameterName, 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-index', '--no-index', [CompletionResultType]::ParameterName, 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;history-list' {
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The Pi session file (JSONL) to read; it is never modified')
            [CompletionResult]::new('--leaf', '--leaf', [CompletionResultType]::ParameterName, 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-index', '--no-index', [CompletionResultType]::ParameterName, 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;history-read' {
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The Pi session file (JSONL) to read; it is never modified')
            [CompletionResult]::new('--leaf', '--leaf', [CompletionResultType]::ParameterName, 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-index', '--no-index', [CompletionResultType]::ParameterName, 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;history-search' {
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The Pi session file (JSONL) to read; it is never modified')
            [CompletionResult]::new('--leaf', '--leaf', [CompletionResultType]::ParameterName, 'Entry id of the leaf whose root-to-leaf path is the active branch [default: the file''s last entry, which is what Pi shows when it reopens the file]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-index', '--no-index', [CompletionResultType]::ParameterName, 'Read the whole file and leave the session index alone (`data.index` is then "bypassed"); by default the index in the cache directory is used and kept up to date')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;boot-render' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--window-id', '--window-id', [CompletionResultType]::ParameterName, 'The window this boot opens [default: the session''s root window id]')
            [CompletionResult]::new('--previous-window-id', '--previous-window-id', [CompletionResultType]::ParameterName, 'The window active before this one (omit for the root boot)')
            [CompletionResult]::new('--opened-at', '--opened-at', [CompletionResultType]::ParameterName, 'When boot construction began (RFC 3339); every relative age is against it [default: now]')
            [CompletionResult]::new('--max-chars', '--max-chars', [CompletionResultType]::ParameterName, 'Fit the boot text into this many characters (e.g. a host''s context-injection cap): MAP tails and recent-note rows are trimmed visibly; identity and protocol never are')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;budget-check' {
            [CompletionResult]::new('--agent-dir', '--agent-dir', [CompletionResultType]::ParameterName, 'Pi''s agent directory holding the global settings.json [default: $PI_CODING_AGENT_DIR, else ~/.pi/agent]')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'The project directory whose .pi/settings.json applies [default: the working directory]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The active model as <provider>/<id>, selecting compaction.modelOverrides (the request''s "model" wins when both are given)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--untrusted-project', '--untrusted-project', [CompletionResultType]::ParameterName, 'Ignore the project''s .pi/settings.json (pass this when Pi reports the project untrusted)')
            [CompletionResult]::new('--settings-only', '--settings-only', [CompletionResultType]::ParameterName, 'Print the resolved settings and thresholds; read nothing from stdin')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;dream' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--dreamer', '--dreamer', [CompletionResultType]::ParameterName, 'Dreamer model pattern for Pi''s `--model` (beats the `pi-context.dreamer` setting)')
            [CompletionResult]::new('--min-sessions', '--min-sessions', [CompletionResultType]::ParameterName, 'Material gate: at least this many session homes changed since the last run')
            [CompletionResult]::new('--min-hours', '--min-hours', [CompletionResultType]::ParameterName, 'Time gate: at least this many hours since the last run (decimals allowed)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'End the dreamer after this long and record a failed run (e.g. `90s`, `30m`, `2h`)')
            [CompletionResult]::new('--pi-bin', '--pi-bin', [CompletionResultType]::ParameterName, 'The Pi binary; default `$PI_CONTEXT_PI_BIN`, else `pi` on PATH')
            [CompletionResult]::new('--agent-dir', '--agent-dir', [CompletionResultType]::ParameterName, 'Pi''s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. Passed to the dreamer as `PI_CODING_AGENT_DIR`')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Run even when the time or material gate is closed (never bypasses the lock)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;dream-fs' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--journal', '--journal', [CompletionResultType]::ParameterName, 'Append this attempt, applied or refused, to this JSONL journal (the dream run''s)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;doctor' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;mcp' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'A Pi session file (JSONL): enables history_windows, history_list, history_read and history_search over it (never modified)')
            [CompletionResult]::new('--leaf', '--leaf', [CompletionResultType]::ParameterName, 'With --session: entry id of the leaf whose path is the active branch [default: the file''s last entry]')
            [CompletionResult]::new('--host-state', '--host-state', [CompletionResultType]::ParameterName, 'Directory where a host hook records the host''s current session (`claude-hook`): each call reads `<DIR>/<parent pid>.json` and, when present, its `session_id` names the session home (it follows /clear; --session-id is only the fallback)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Work without the cache directory: read every note file instead of trusting the notes metadata cache (which is neither read nor written); notes-read then writes its access bump into the note itself (durably) instead of the access journal')
            [CompletionResult]::new('--no-index', '--no-index', [CompletionResultType]::ParameterName, 'With --session: read the whole file instead of using the session index')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;claude-hook' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'Pi session id: names this session''s home (bare addresses). Without it, bare addresses are refused with `no_session` and listings skip the session home')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Directory whose repository names the project home [default: the working directory]')
            [CompletionResult]::new('--project-key', '--project-key', [CompletionResultType]::ParameterName, 'Use this project key instead of deriving one from --cwd')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent name, slugified: names @self/ [default: slug of $PI_NOTES_AGENT when defined, else anonymous]')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id; the slug of the part after the last "/" names @model/ [default: default]')
            [CompletionResult]::new('--host-state', '--host-state', [CompletionResultType]::ParameterName, 'Directory shared with `pi-context mcp --host-state`: the current session is written to `<DIR>/<parent pid>.json`')
            [CompletionResult]::new('--max-chars', '--max-chars', [CompletionResultType]::ParameterName, 'Character budget of the boot block (Claude Code caps hook output at 10,000)')
            [CompletionResult]::new('--tool-prefix', '--tool-prefix', [CompletionResultType]::ParameterName, 'Prefix of the MCP tool names the boot refers to')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;sync' {
            [CompletionResult]::new('--notes-home', '--notes-home', [CompletionResultType]::ParameterName, 'Notes root [default: $PI_NOTES_HOME when set and non-empty, else ~/.agents/notes]')
            [CompletionResult]::new('--remote', '--remote', [CompletionResultType]::ParameterName, 'A Git remote of the notes home, or a URL (path, file://, git://; https:// and ssh:// when built in) [default: pi-context.syncRemote in Pi''s settings, else origin]')
            [CompletionResult]::new('--branch', '--branch', [CompletionResultType]::ParameterName, 'The remote branch')
            [CompletionResult]::new('--agent-dir', '--agent-dir', [CompletionResultType]::ParameterName, 'Pi''s agent directory (global settings); default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('--adopt-remote', '--adopt-remote', [CompletionResultType]::ParameterName, 'Accept a remote that was rewritten (force-pushed, recreated): merge into its line and keep the old line under a tag instead of refusing with remote_rewritten')
            [CompletionResult]::new('--include-sessions', '--include-sessions', [CompletionResultType]::ParameterName, 'Also sync the session homes pi/session/* (by default they stay on this machine)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;completions' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'What to print on stdout: the JSON envelope (default), the model-facing text, or both (the envelope with an added top-level "text" field)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'pi-context;help' {
            [CompletionResult]::new('notes-write', 'notes-write', [CompletionResultType]::ParameterValue, 'Create or overwrite a note')
            [CompletionResult]::new('notes-read', 'notes-read', [CompletionResultType]::ParameterValue, 'Read a window of a note''s body, with its metadata')
            [CompletionResult]::new('notes-update', 'notes-update', [CompletionResultType]::ParameterValue, 'Edit, crumple, smooth, re-origin or rename a note')
            [CompletionResult]::new('notes-list', 'notes-list', [CompletionResultType]::ParameterValue, 'List notes, most recently updated first')
            [CompletionResult]::new('notes-search', 'notes-search', [CompletionResultType]::ParameterValue, 'Search note bodies for literals, case-insensitively')
            [CompletionResult]::new('project-key', 'project-key', [CompletionResultType]::ParameterValue, 'Print the project key of a directory')
            [CompletionResult]::new('history-windows', 'history-windows', [CompletionResultType]::ParameterValue, 'List the reset windows of a session''s active branch')
            [CompletionResult]::new('history-list', 'history-list', [CompletionResultType]::ParameterValue, 'Page through the events of a session')
            [CompletionResult]::new('history-read', 'history-read', [CompletionResultType]::ParameterValue, 'Read one event''s document')
            [CompletionResult]::new('history-search', 'history-search', [CompletionResultType]::ParameterValue, 'Search a session''s events for literals')
            [CompletionResult]::new('boot-render', 'boot-render', [CompletionResultType]::ParameterValue, 'Render the boot block for the head of a context window')
            [CompletionResult]::new('budget-check', 'budget-check', [CompletionResultType]::ParameterValue, 'Decide the context-budget action from usage and Pi settings')
            [CompletionResult]::new('dream', 'dream', [CompletionResultType]::ParameterValue, 'Consolidate the notes store with a dreamer model (locked, gated, jailed, audited)')
            [CompletionResult]::new('dream-fs', 'dream-fs', [CompletionResultType]::ParameterValue, 'Jailed file operations for the dreamer''s write, edit and delete tools')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check a notes home without changing it')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve pi-context''s notes (and one Pi session''s history) to an MCP host over stdio')
            [CompletionResult]::new('claude-hook', 'claude-hook', [CompletionResultType]::ParameterValue, 'Claude Code SessionStart hook: print the boot block as additional context')
            [CompletionResult]::new('sync', 'sync', [CompletionResultType]::ParameterValue, 'The same notes on every machine: commit, fetch, merge note by note, push (never forced)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'pi-context;help;notes-write' {
            break
        }
        'pi-context;help;notes-read' {
            break
        }
        'pi-context;help;notes-update' {
            break
        }
        'pi-context;help;notes-list' {
            break
        }
        'pi-context;help;notes-search' {
            break
        }
        'pi-context;help;project-key' {
            break
        }
        'pi-context;help;history-windows' {
            break
        }
        'pi-context;help;history-list' {
            break
        }
        'pi-context;help;history-read' {
            break
        }
        'pi-context;help;history-search' {
            break
        }
        'pi-context;help;boot-render' {
            break
        }
        'pi-context;help;budget-check' {
            break
        }
        'pi-context;help;dream' {
            break
        }
        'pi-context;help;dream-fs' {
            break
        }
        'pi-context;help;doctor' {
            break
        }
        'pi-context;help;mcp' {
            break
        }
        'pi-context;help;claude-hook' {
            break
        }
        'pi-context;help;sync' {
            break
        }
        'pi-context;help;completions' {
            break
        }
        'pi-context;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
