-- Sessions side by side: two sessions of one folder run at once, each chat showing only its own session's
-- conversation (`:w` sends to the buffer's session), `:Stepwise sessions` switches, a question of a session not in
-- view is said and kept for its chat, a worktree session is applied into the folder (then reviewed) and
-- discarded after asking, sessions come back after a restart. The mock model answers each session's conversation
-- from a script of its own (`--routes`, by its first user message).
local H = require('helpers')
local api = vim.api
local st = require('stepwise.state')

--- Record the User events of the chat and of the sessions from now on.
local function user_events()
  local ev = { chat = {}, sessions = {}, applied = {}, opened = {}, closed = {} }
  local names = {
    StepwiseChat = 'chat',
    StepwiseSessions = 'sessions',
    StepwiseSessionApplied = 'applied',
    StepwiseReviewOpened = 'opened',
    StepwiseSessionClosed = 'closed',
  }
  api.nvim_create_autocmd('User', {
    group = api.nvim_create_augroup('stepwise-test-sessions', { clear = true }),
    pattern = vim.tbl_keys(names),
    callback = function(e)
      table.insert(ev[names[e.match]], vim.deepcopy(e.data))
    end,
  })
  return ev
end

--- Type `text` as the prompt of a chat buffer and :w.
local function send(buf, text)
  api.nvim_set_current_buf(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  H.eq('## You', lines[#lines - 1], 'the prompt header is the line before last')
  api.nvim_buf_set_lines(buf, -2, -1, false, { text })
  vim.cmd('write')
end

--- Wait for a chat buffer's history to be shown.
local function restored(ev, session)
  H.wait(function()
    return vim.iter(ev.chat):any(function(e)
      return e.kind == 'restored' and e.session == session
    end)
  end, 15000, 'the history of the chat of ' .. session)
end

--- Wait for the end of a session's run; returns its idle status.
local function idle_of(cap, session, ms)
  return H.wait(function()
    return vim.iter(cap.status):find(function(s)
      return s.state == 'idle' and s.session == session
    end)
  end, ms or 20000, 'the end of the run of ' .. session, function()
    return cap.status
  end)
end

local function notified(cap, text)
  return vim.iter(cap.notify):find(function(n)
    return tostring(n.msg):find(text, 1, true) ~= nil
  end)
end

--- vim.ui.select picks the item `want(item)` says (recording the lines shown).
local function pick(shown, want)
  H.stub_select(function(items, opts, on_choice)
    shown[#shown + 1] = vim.tbl_map(opts.format_item, items)
    on_choice(vim.iter(items):find(want))
  end)
end

local function git(dir, ...)
  local r = vim.system({ 'git', '-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ... }, { text = true }):wait()
  if r.code ~= 0 then
    H.fail('git ' .. table.concat({ ... }, ' ') .. ': ' .. tostring(r.stderr))
  end
  return r.stdout
end

return H.spec({
  {
    name = 'sessions: two sessions run at once, each chat shows only its own; :w sends to the buffer\'s session; :Stepwise sessions switches',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({}, {
        { key = 'alpha task', steps = { H.turn({ calls = { H.todo({ { 'Alpha step', 'in_progress' } }) } }), H.turn({ delay = 4000, text = 'Alpha says hi.' }) } },
        { key = 'beta task', steps = { H.turn({ calls = { H.todo({ { 'Beta step', 'in_progress' } }) } }), H.turn({ delay = 1500, text = 'Beta says hi.' }) } },
      })
      H.setup(m)
      local cap = H.capture()
      local ev = user_events()
      vim.cmd('Stepwise chat')
      local main_buf = api.nvim_get_current_buf()
      local chat_win = api.nvim_get_current_win()
      H.eq('stepwise://chat', api.nvim_buf_get_name(main_buf), 'the folder\'s own chat')
      restored(ev, 'main')
      send(main_buf, 'alpha task')
      local main = require('stepwise').current_folder()
      H.wait(function()
        return main.state == 'running'
      end, 10000, 'the folder\'s own session to run')

      vim.cmd('Stepwise new Side')
      local side_buf = H.wait(function()
        local b = api.nvim_get_current_buf()
        return b ~= main_buf and vim.b[b].stepwise_session and b
      end, 15000, 'the new session\'s chat')
      local side = H.truthy(st.get(vim.b[side_buf].stepwise_session), 'the new session\'s state')
      H.eq('stepwise://chat/' .. side.session, api.nvim_buf_get_name(side_buf), 'a chat buffer per session')
      H.eq(chat_win, api.nvim_get_current_win(), 'shown in the chat\'s window')
      H.eq(-1, vim.fn.bufwinid(main_buf), 'the other session\'s chat left the window')
      H.eq(side.session, main.view, 'the new session is in view')
      restored(ev, side.session)
      H.wait(function()
        return api.nvim_buf_get_lines(side_buf, 0, 1, false)[1] == '# Session: Side'
      end, 10000, 'the session named on top of its chat', function()
        return api.nvim_buf_get_lines(side_buf, 0, -1, false)
      end)
      send(side_buf, 'beta task')

      -- both run at once: the statusline of the session in view counts them
      local line = H.wait(function()
        local l = require('stepwise').statusline()
        return l:find('2 sessions running', 1, true) and l
      end, 15000, 'two sessions running', function()
        return { line = require('stepwise').statusline(), main = main.state, side = side.state }
      end)
      H.contains(line, 'stepwise [Side]', 'the statusline names the session in view')
      idle_of(cap, side.session)
      idle_of(cap, 'main')
      for buf, text in pairs({ [main_buf] = 'Alpha says hi.', [side_buf] = 'Beta says hi.' }) do
        H.wait(function()
          return H.buf_text(buf):find(text, 1, true)
        end, 5000, text .. ' in its chat', function()
          return H.buf_text(buf)
        end)
      end
      local main_text, side_text = H.buf_text(main_buf), H.buf_text(side_buf)
      H.contains(main_text, '[>] #1: Alpha step', 'the folder\'s own plan on top of its chat')
      H.contains(side_text, '[>] #1: Beta step', 'the side session\'s plan on top of its chat')
      for _, other in ipairs({ 'Beta says hi.', 'beta task', 'Beta step' }) do
        H.truthy(not main_text:find(other, 1, true), 'the folder\'s chat shows nothing of the side session: ' .. other)
      end
      for _, other in ipairs({ 'Alpha says hi.', 'alpha task', 'Alpha step' }) do
        H.truthy(not side_text:find(other, 1, true), 'the side chat shows nothing of the folder\'s session: ' .. other)
      end
      -- :w went to each buffer's session: the model read each prompt in a conversation of its own
      for _, req in ipairs(H.recorded(m)) do
        local body = vim.json.encode(req.body or req)
        H.truthy(not (body:find('alpha task', 1, true) and body:find('beta task', 1, true)), 'one conversation per session')
      end

      -- :Stepwise sessions lists both and switches back
      local shown = {}
      pick(shown, function(s)
        return s.session == 'main'
      end)
      vim.cmd('Stepwise sessions')
      H.wait(function()
        return api.nvim_get_current_buf() == main_buf
      end, 10000, 'the folder\'s own chat again')
      H.eq(chat_win, api.nvim_get_current_win(), 'in the same window')
      H.eq(-1, vim.fn.bufwinid(side_buf), 'the side chat hidden, kept')
      H.eq('main', main.view, 'the folder\'s own session in view')
      H.eq({ { '  Main — idle · 0/1', '▸ Side — idle · 0/1' } }, shown, 'the picker: title, state, progress; the one in view marked')
      H.contains(table.concat(require('stepwise').status(), '\n'), 'session: Main (of 2, 0 running); :Stepwise sessions', ':Stepwise status names the session in view')
    end,
  },
  {
    name = 'sessions: a question of a session not in view is said, and shown in its chat when it is opened',
    timeout = 45000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock({}, {
        { key = 'beta task', steps = { H.turn({ calls = { { 'bash', { command = 'echo from-side' } } } }), H.turn({ text = 'Side is done.' }) } },
      })
      H.setup(m, { approval = 'ask' })
      local cap = H.capture()
      local ev = user_events()
      local selects = 0
      H.stub_select(function()
        selects = selects + 1
      end)
      local stepwise = require('stepwise')
      local main = stepwise.current_folder()
      local made
      stepwise.execute(main, 'stepwise.newSession', { title = 'Side' }, function(err, r)
        made = err and { error = err } or r
      end)
      H.wait(function()
        return made
      end, 15000, 'the new session')
      local side = st.session(main.uri, H.truthy(made.session, vim.inspect(made)))
      H.eq('main', main.view, 'the folder\'s own session stays in view')
      H.wait(function()
        return side.title == 'Side'
      end, 10000, 'the session listed (stepwise/sessions)')
      stepwise.run('beta task', { folder = side })
      local said = H.wait(function()
        return notified(cap, 'asks: Run this command?')
      end, 20000, 'the question said', function()
        return cap.notify
      end)
      H.contains(said.msg, 'Side', 'it names the session')
      H.contains(said.msg, 'echo from-side', 'and the command')
      H.eq(vim.log.levels.WARN, said.level, 'as a warning')
      H.eq(0, selects, 'no picker about a session not in view')
      H.eq(1, #require('stepwise.ask').open(), 'the question waits')

      -- its chat, opened now, shows it under the call
      local shown = {}
      pick(shown, function(s)
        return s.session == side.session
      end)
      vim.cmd('Stepwise sessions')
      local buf = H.wait(function()
        local b = api.nvim_get_current_buf()
        return vim.b[b].stepwise_session == side.key and b
      end, 10000, 'the side session\'s chat')
      restored(ev, side.session)
      H.wait(function()
        return H.buf_text(buf):find('> ⚠ Run this command?\n> `echo from-side`', 1, true)
      end, 10000, 'the question in the chat', function()
        return H.buf_text(buf)
      end)
      vim.cmd('Stepwise allow')
      H.eq('end_turn', idle_of(cap, side.session).reason, 'the run goes on once allowed')
      H.wait(function()
        return H.buf_text(buf):find('Side is done.', 1, true)
      end, 5000, 'the end of the run in its chat', function()
        return H.buf_text(buf)
      end)
      H.contains(H.buf_text(buf), '> → Allow', 'the answer in its chat')
      H.contains(H.result_text(H.tool_results(m)[1]), 'from-side', 'the command ran')
    end,
  },
  {
    name = 'sessions: a worktree session changes nothing in the folder until :Stepwise apply, which opens the review; discard asks',
    timeout = 90000,
    fn = function()
      local dir = H.tmpdir('repo')
      git(dir, 'init', '-q', '-b', 'main')
      H.write(dir .. '/a.txt', 'one\n')
      H.write(dir .. '/theirs.txt', 'committed\n')
      git(dir, 'add', '-A')
      git(dir, 'commit', '-q', '-m', 'start')
      vim.cmd.cd(vim.fn.fnameescape(dir))
      local m = H.mock({}, {
        {
          key = 'in the worktree',
          steps = {
            H.turn({ calls = { { 'write_file', { path = 'a.txt', content = 'one, from the worktree\n' } }, { 'write_file', { path = 'new.txt', content = 'made in the worktree\n' } } } }),
            H.turn({ calls = { { 'write_file', { path = 'theirs.txt', content = "the agent's\n" } } } }),
            H.turn({ text = 'Tree done.' }),
          },
        },
      })
      H.setup(m)
      local cap = H.capture()
      local ev = user_events()
      vim.cmd('Stepwise new worktree Tree')
      local buf = H.wait(function()
        local s = st.get(vim.b[api.nvim_get_current_buf()].stepwise_session)
        return s and s.worktree and api.nvim_get_current_buf()
      end, 30000, 'the worktree session\'s chat', function()
        return cap.notify
      end)
      local s = st.get(vim.b[buf].stepwise_session)
      H.eq('stepwise/' .. s.session, s.branch, 'its branch')
      H.eq('one\n', H.read(s.worktree .. '/a.txt'), 'the worktree starts as the folder is')
      restored(ev, s.session)
      send(buf, 'in the worktree')
      H.eq('end_turn', idle_of(cap, s.session, 30000).reason, 'the run ends')
      H.eq('one\n', H.read(dir .. '/a.txt'), 'nothing reached the folder')
      H.eq(nil, H.read(dir .. '/new.txt'), 'no new file in the folder')
      H.wait(function()
        return H.read(s.worktree .. '/a.txt') == 'one, from the worktree\n'
      end, 5000, 'the change in the worktree')
      H.eq(1, #H.client().workspace_folders, 'the worktree is no folder of the client')
      -- the user changes a file the session changed too: a conflict at the apply, never overwritten
      H.write(dir .. '/theirs.txt', "the user's\n")
      local shown = {}
      pick(shown, function()
        return nil
      end)
      vim.cmd('Stepwise sessions')
      H.wait(function()
        return #shown == 1
      end, 10000, 'the picker')
      H.contains(shown[1][2], 'Tree — idle · worktree stepwise/' .. s.session .. ' · 3 not applied', 'the worktree session in the picker')

      vim.cmd('Stepwise apply')
      H.wait(function()
        return #ev.applied == 1 and #ev.opened == 1
      end, 30000, 'the apply and its review', function()
        return { applied = ev.applied, notify = cap.notify }
      end)
      H.eq({ 'a.txt', 'new.txt' }, ev.applied[1].result.applied, 'what was applied')
      H.eq({ 'theirs.txt' }, ev.applied[1].result.conflicts, 'the conflict')
      local warned = H.truthy(notified(cap, 'changed in the folder since'), 'the conflict said')
      H.contains(warned.msg, 'theirs.txt', 'naming the file')
      H.eq(vim.log.levels.WARN, warned.level, 'as a warning')
      H.wait(function()
        return H.read(dir .. '/a.txt') == 'one, from the worktree\n' and H.read(dir .. '/new.txt') == 'made in the worktree\n'
      end, 10000, 'the applied files on disk', function()
        return { a = H.read(dir .. '/a.txt'), new = H.read(dir .. '/new.txt') }
      end)
      H.eq("the user's\n", H.read(dir .. '/theirs.txt'), 'the user\'s change left alone')
      H.eq(2, ev.opened[1].files, 'the review of the applied run opened')
      local before = vim.fn.bufnr('stepwise://before/a.txt')
      H.truthy(before > 0, 'a.txt in diff against its text before')
      H.eq({ 'one' }, api.nvim_buf_get_lines(before, 0, -1, false), 'the text before the apply')

      -- discard asks while something is not applied (theirs.txt): kept on "Keep", gone on "Discard"
      local orig_confirm = vim.fn.confirm
      local asked = {}
      local answer = 2
      vim.fn.confirm = function(q)
        asked[#asked + 1] = q
        return answer
      end
      local ok, err = pcall(function()
        vim.cmd('Stepwise discard ' .. s.session)
        H.wait(function()
          return notified(cap, 'session Tree kept')
        end, 10000, 'the session kept')
        H.contains(asked[1], '1 file changed and not applied', 'the question says what would be lost')
        H.truthy(vim.uv.fs_stat(s.worktree), 'the worktree stays')
        answer = 1
        vim.cmd('Stepwise discard ' .. s.session)
        H.wait(function()
          return #ev.closed == 1
        end, 20000, 'the session discarded')
      end)
      vim.fn.confirm = orig_confirm
      if not ok then
        error(err, 0)
      end
      H.eq(2, #asked, 'asked each time')
      H.eq(nil, vim.uv.fs_stat(s.worktree), 'the worktree removed')
      H.eq(false, api.nvim_buf_is_valid(buf), 'its chat gone')
      H.eq('', git(dir, 'branch', '--list', 'stepwise/*'), 'its branch removed')
    end,
  },
  {
    name = 'sessions: after a restart the plugin lists the folder\'s sessions again and a session\'s chat shows its history',
    timeout = 60000,
    fn = function()
      local dir = H.workspace({ ['a.txt'] = 'a\n' })
      local state_dir = H.tmpdir('state')
      local m = H.mock({}, { { key = 'kept task', steps = { H.turn({ text = 'Kept answers.' }) } } })
      H.setup(m, nil, state_dir)
      local cap = H.capture()
      local ev = user_events()
      vim.cmd('Stepwise new Kept')
      local buf = H.wait(function()
        local b = api.nvim_get_current_buf()
        return vim.b[b].stepwise_session and b
      end, 15000, 'the new session\'s chat')
      local id = st.get(vim.b[buf].stepwise_session).session
      restored(ev, id)
      send(buf, 'kept task')
      idle_of(cap, id)

      vim.cmd('silent! %bwipeout!')
      require('stepwise').stop(3000)
      H.setup(m, nil, state_dir)
      ev = user_events()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      H.wait_attached(api.nvim_get_current_buf())
      H.wait(function()
        return vim.iter(ev.sessions):any(function(e)
          return vim.iter(e.sessions):any(function(x)
            return x.session == id and x.title == 'Kept'
          end)
        end)
      end, 15000, 'the sessions listed when the client attached', function()
        return ev.sessions
      end)
      local shown = {}
      pick(shown, function(s)
        return s.session == id
      end)
      vim.cmd('Stepwise sessions')
      local chat = H.wait(function()
        local b = vim.fn.bufnr('stepwise://chat/' .. id)
        return b > 0 and b
      end, 10000, 'the chat of the kept session')
      restored(ev, id)
      H.contains(H.buf_text(chat), '## You\n\nkept task', 'its prompt')
      H.contains(H.buf_text(chat), 'Kept answers.', 'its answer')
    end,
  },
})
