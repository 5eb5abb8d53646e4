-- Routing by session, without a model: each notification goes to the state and the chat of its own session
-- (`workspace` + `session`), the list of sessions is taken (a session discarded elsewhere goes), a question of a
-- session not in view is said rather than picked and withdrawn only by its own session's end, a worktree's file
-- is that session's, the statusline counts the running sessions.
local H = require('helpers')
local api = vim.api
local st = require('stepwise.state')

--- A folder known to the plugin (no server asked), and its uri.
local function folder()
  local dir = H.tmpdir('routing')
  local uri = vim.uri_from_fname(dir)
  return st.ensure(uri, dir), uri, dir
end

return H.spec({
  {
    name = 'sessions routing: plans, states and the list go to their own session; a discarded session goes',
    fn = function()
      require('stepwise').setup({ keymaps = false, autostart = false })
      local cap = H.capture()
      local handlers = require('stepwise.handlers').handlers()
      local sessions = require('stepwise.sessions')
      local statusline = require('stepwise.statusline')
      local main, uri = folder()
      sessions.take(uri, {
        { session = 'main', title = 'Main', state = 'idle' },
        { session = 's1', title = 'Side', state = 'idle', worktree = main.path .. '-wt', branch = 'stepwise/s1', unapplied = 2 },
      })
      local side = st.get(st.key(uri, 's1'))
      H.eq({ 'Side', 'stepwise/s1', 2 }, { side.title, side.branch, side.unapplied }, 'the listed session')
      handlers['stepwise/plan'](nil, { workspace = uri, session = 's1', items = { { id = '1', text = 'Side step', status = 'in_progress' } }, completed = 0, total = 1, revision = 1, by = 'model' })
      H.eq('Side step', side.plan.items[1].text, 'the plan is the session\'s')
      H.eq(nil, main.plan, 'not the folder\'s own')
      H.eq('s1', cap.plan[#cap.plan].session, 'StepwisePlan names the session')
      handlers['stepwise/status'](nil, { workspace = uri, session = 's1', state = 'running', runId = 'r1' })
      H.eq({ 'running', 'idle' }, { side.state, main.state }, 'the run is the session\'s')
      H.eq(' · 1 session running', statusline.sessions(main), 'the statusline counts it')
      H.eq('stepwise · 1 session running', statusline.line(main), 'also with nothing else to say')
      main.view = 's1'
      H.eq(side, st.in_view(main), 'the session in view')
      H.eq('stepwise [Side] 0/1 ▸ Side step · 1 session running', statusline.line(side), 'the session in view named')
      H.eq('▸ Side — running · 0/1 · worktree stepwise/s1 · 2 not applied', sessions.describe(side), 'its line in the picker')
      H.eq({ 's1' }, sessions.complete(main, 'apply'), 'apply completes the worktree sessions')
      handlers['stepwise/status'](nil, { workspace = uri, session = 's1', state = 'idle', runId = 'r1', reason = 'end_turn' })
      H.contains(cap.notify[#cap.notify].msg, 'run finished (end_turn) · session Side', 'its end said with its title')
      -- discarded elsewhere: no longer listed, forgotten; the folder's own comes in view
      handlers['stepwise/sessions'](nil, { workspace = uri, sessions = { { session = 'main', title = 'Main', state = 'idle' } } })
      H.eq(nil, st.get(st.key(uri, 's1')), 'the discarded session is gone')
      H.eq('main', main.view, 'the folder\'s own session in view')
      H.eq({ main }, st.sessions(uri), 'one session left')
      H.eq('', statusline.sessions(main), 'nothing running to count')
    end,
  },
  {
    name = 'sessions routing: a file of a worktree is that session\'s, never a folder of its own',
    fn = function()
      require('stepwise').setup({ keymaps = false, autostart = false })
      local main, uri, dir = folder()
      local tree = H.tmpdir('tree')
      H.write(tree .. '/a.txt', 'a\n')
      require('stepwise.sessions').take(uri, { { session = 'main', state = 'idle' }, { session = 's2', title = 'Tree', state = 'idle', worktree = tree } })
      local s = st.get(st.key(uri, 's2'))
      H.eq(s, st.containing(tree .. '/a.txt'), 'a worktree file belongs to its session')
      H.eq(main, st.containing(dir .. '/b.txt'), 'a folder file to the folder')
      vim.cmd.edit(vim.fn.fnameescape(tree .. '/a.txt'))
      local buf = api.nvim_get_current_buf()
      H.eq(nil, require('stepwise.client').root_for_buf(buf), 'not attached as a folder')
      H.eq(s, require('stepwise').current_folder(buf), 'commands in it act on its session')
      H.eq('a.txt', require('stepwise.review').relative(s, tree .. '/a.txt'), 'its paths are the worktree\'s')
    end,
  },
  {
    name = 'sessions routing: a question of a session not in view is said, not picked, and withdrawn only by its own end',
    fn = function()
      require('stepwise').setup({ keymaps = false, autostart = false })
      local cap = H.capture()
      local ask = require('stepwise.ask')
      local handlers = require('stepwise.handlers').handlers()
      local _, uri = folder()
      require('stepwise.sessions').take(uri, { { session = 'main', state = 'idle' }, { session = 's1', title = 'Side', state = 'running' } })
      local picked = 0
      H.stub_select(function()
        picked = picked + 1
      end)
      local answers = {}
      local function asked(params)
        coroutine.wrap(function()
          local answer = ask.on_ask(nil, params)
          answers[#answers + 1] = answer
        end)()
      end
      asked({ workspace = uri, session = 's1', kind = 'command', command = 'make side', callId = 'c1' })
      H.eq(0, picked, 'no picker for a session not in view')
      local said = cap.notify[#cap.notify]
      H.contains(said.msg, 'Side asks: Run this command? `make side`', 'said, naming the session')
      H.eq(vim.log.levels.WARN, said.level, 'as a warning')
      asked({ workspace = uri, kind = 'command', command = 'make main', callId = 'c1' })
      H.eq(1, picked, 'the session in view (the folder\'s own, no chat shown) is asked with the picker')
      -- the same call id in the other session and the end of the folder's run withdraw nothing of s1
      handlers['stepwise/toolCall'](nil, { workspace = uri, session = 'main', id = 'c1', name = 'bash', phase = 'finished' })
      H.wait(function()
        return #answers == 1
      end, 2000, 'the folder\'s question withdrawn')
      H.eq({ { answer = 'deny' } }, answers, 'withdrawn by its own call\'s end, s1\'s of the same id not')
      handlers['stepwise/status'](nil, { workspace = uri, state = 'idle', reason = 'cancelled' })
      H.eq(1, #ask.open(), 's1\'s question still waits')
      H.eq(true, ask.answer('allow', st.key(uri, 'main')), ':Stepwise allow in the folder answers the one waiting')
      H.wait(function()
        return #answers == 2
      end, 2000, 's1\'s answer')
      H.eq({ answer = 'allow' }, answers[2], 's1\'s question answered')
      asked({ workspace = uri, session = 's1', kind = 'command', command = 'again', callId = 'c2' })
      handlers['stepwise/status'](nil, { workspace = uri, session = 's1', state = 'idle', reason = 'cancelled' })
      H.wait(function()
        return #answers == 3
      end, 2000, 's1\'s question withdrawn')
      H.eq({ answer = 'deny' }, answers[3], 'withdrawn by its own session\'s end')
      H.eq(0, #ask.open(), 'none waits')
    end,
  },
  {
    name = 'sessions routing: each chat buffer receives only its session\'s stream',
    timeout = 30000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      H.setup(nil)
      local ev = {}
      api.nvim_create_autocmd('User', {
        group = api.nvim_create_augroup('stepwise-test-routing', { clear = true }),
        pattern = 'StepwiseChat',
        callback = function(e)
          ev[#ev + 1] = e.data
        end,
      })
      local chat = require('stepwise.chat')
      local events = require('stepwise.events')
      local main = require('stepwise').current_folder()
      local side = st.session(main.uri, 's9')
      local a, b = chat.get(main), chat.get(side)
      H.eq('stepwise://chat/s9', api.nvim_buf_get_name(b.buf), 'the other session\'s chat')
      H.wait(function()
        return #vim.tbl_filter(function(e)
          return e.kind == 'restored'
        end, ev) == 2
      end, 15000, 'both histories shown')
      events.emit('text', { workspace = main.uri, session = 's9', text = 'only for s9' })
      events.emit('text', { workspace = main.uri, text = 'only for main' })
      H.contains(H.buf_text(b.buf), 'only for s9', 'the side chat got its text')
      H.contains(H.buf_text(a.buf), 'only for main', 'the folder\'s chat got its own')
      H.truthy(not H.buf_text(a.buf):find('only for s9', 1, true), 'not the other\'s')
      H.truthy(not H.buf_text(b.buf):find('only for main', 1, true), 'nor the other way')
      H.eq(side, require('stepwise').current_folder(b.buf), 'commands in a chat act on its session')
    end,
  },
})
