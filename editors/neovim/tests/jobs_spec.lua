-- Background tasks: `:Stepwise jobs` lists the folder's tasks (command, state, output tail) live, `x` there
-- stops the task under the cursor (its process gone), `:Stepwise kill ID` stops one by id, and the chat shows
-- a line when a task ends, also after the run ended.
local H = require('helpers')
local api = vim.api

local TICKER = 'echo $$ > ticker.pid; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done'
local FAILING = 'echo "build failed: missing script dev" >&2; exit 3'

--- Whether process `pid` runs (a zombie does not).
local function alive(pid)
  local stat = H.read('/proc/' .. pid .. '/stat')
  if not stat then
    return false
  end
  local after = stat:match('.*%)%s*(.*)$') or ''
  return not after:match('^[ZX]')
end

local function highest_tick(lines)
  local n = 0
  for _, l in ipairs(lines or {}) do
    n = math.max(n, tonumber(l:match('tick (%d+)')) or 0)
  end
  return n
end

local function has_line(lines, line)
  return vim.tbl_contains(lines or {}, line)
end

return H.spec({
  {
    name = 'jobs: a payload is checked; the float lines show state, command and the last lines of output',
    fn = function()
      local jobs = require('stepwise.jobs')
      local tasks = jobs.tasks_of({ workspace = 'w', tasks = { { id = 'bg-1', command = 'x', state = 'running', running = true, tail = 'a' }, { command = 'no id' }, 'junk' } })
      H.eq(1, #tasks, 'only the task with an id')
      H.eq({ 'b', 'progress 99%', 'done' }, jobs.tail('a\nb\n\27[32mprogress 10%\rprogress 99%\r\ndone\n', 3), 'the last 3 lines, colour codes and overwrites resolved')
      H.eq({}, jobs.tail('', 3), 'no output')
      local lines = jobs.lines({ jobs = { { id = 'bg-1', command = 'npm run\ndev', state = 'exited 0', running = false, tail = 'ready\n' }, { id = 'bg-2', command = 'sleep 9', state = 'running', running = true, tail = '' } } })
      H.eq({ '✓ bg-1  exited 0', '  $ npm run dev', '  │ ready', '', '● bg-2  running', '  $ sleep 9' }, lines, 'the float')
      H.eq({ 'No background tasks in this session.' }, (jobs.lines({})), 'none')
    end,
  },
  {
    name = 'jobs: the statusline counts the running background tasks, with or without a plan or a run',
    fn = function()
      local line = require('stepwise.statusline').line
      local running = { id = 'bg-1', command = 'x', state = 'running', running = true, tail = '' }
      local other = { id = 'bg-3', command = 'y', state = 'running', running = true, tail = '' }
      local ended = { id = 'bg-2', command = 'z', state = 'exited 0', running = false, tail = '' }
      H.eq('', line({ state = 'idle', jobs = { ended } }), 'an ended task is not counted')
      H.eq('stepwise · 1 job', line({ state = 'idle', jobs = { running, ended } }), 'idle, one task running (between runs)')
      H.eq('stepwise running · 2 jobs', line({ state = 'running', jobs = { running, ended, other } }), 'a run and two tasks')
      local plan = { items = { { id = 1, text = 'Write the fix', status = 'in_progress' }, { id = 2, text = 'Test', status = 'pending' } }, completed = 0, total = 2 }
      H.eq('stepwise 0/2 ▸ Write the fix (waiting) · 1 job', line({ state = 'waiting', plan = plan, jobs = { running } }), 'with the plan')
      H.eq('stepwise 0/2 ▸ Write the fix', line({ state = 'running', plan = plan }), 'no task, no count')
    end,
  },
  {
    name = 'jobs: :Stepwise jobs shows a running task live; x stops it (its process gone); the chat tells each end',
    timeout = 60000,
    fn = function()
      local dir = H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock({
        H.turn({ text = 'Starting the ticker.', calls = { { 'background_run', { command = TICKER } } } }),
        H.turn({ calls = { { 'background_run', { command = FAILING } } } }),
        H.turn({ text = 'The ticker runs in the background.' }),
      })
      H.setup(m)
      local cap = H.capture()
      local background
      api.nvim_create_autocmd('User', {
        pattern = 'StepwiseBackground',
        callback = function(ev)
          background = ev.data
        end,
      })
      vim.cmd('Stepwise chat')
      local chat = api.nvim_get_current_buf()
      vim.cmd('Stepwise run Start the ticker in the background')
      H.wait_idle(cap, 20000)
      local folder = require('stepwise').current_folder()
      H.wait(function()
        local t = folder.jobs and folder.jobs[1]
        return t and t.running and t.tail:find('tick 2', 1, true)
      end, 15000, 'the ticker running and printing', function()
        return folder.jobs
      end)
      H.eq({ 'bg-1' }, vim.fn.getcompletion('Stepwise kill ', 'cmdline'), ':Stepwise kill completes the running task')
      H.eq('stepwise · 1 job', require('stepwise').statusline(), 'the statusline counts the running task after the run')
      H.eq(1, background.running, 'User StepwiseBackground carries the running count')
      H.truthy(vim.tbl_contains(require('stepwise').status(), 'background: 1 running (bg-1); :Stepwise jobs'), ':Stepwise status names the running task')

      vim.cmd('Stepwise jobs')
      local jobs = require('stepwise.jobs')
      local float = api.nvim_get_current_win()
      H.eq('stepwise://jobs', api.nvim_buf_get_name(0), 'the cursor is in the jobs float')
      H.truthy(api.nvim_win_get_config(float).relative ~= '', 'a float')
      local lines = jobs.shown()
      H.eq('● bg-1  running', lines[1], 'the running task first: ' .. vim.inspect(lines))
      H.eq('  $ ' .. TICKER, lines[2], 'its command')
      H.truthy(has_line(lines, '✗ bg-2  exited 3'), 'the failed task: ' .. vim.inspect(lines))
      H.truthy(has_line(lines, '  │ build failed: missing script dev'), 'its output: ' .. vim.inspect(lines))
      -- live: newer output comes in while the float is open
      local seen = highest_tick(lines)
      H.truthy(seen >= 2, 'the tail is shown: ' .. vim.inspect(lines))
      H.wait(function()
        return highest_tick(jobs.shown()) >= seen + 3
      end, 10000, 'newer output in the float', function()
        return jobs.shown()
      end)

      local pid = tonumber(vim.trim(H.read(dir .. '/ticker.pid') or ''))
      H.truthy(pid and alive(pid), 'the ticker runs before the stop: ' .. tostring(pid))
      api.nvim_win_set_cursor(float, { 3, 0 }) -- an output line of bg-1: x stops the task it belongs to
      vim.cmd('normal x')
      H.wait(function()
        local t = folder.jobs[1]
        return t.state == 'killed by the user (SIGTERM)' and not t.running
      end, 10000, 'bg-1 killed by the user', function()
        return folder.jobs
      end)
      H.truthy(not alive(pid), 'the ticker ' .. pid .. ' outlived its stop')
      H.eq('', require('stepwise').statusline(), 'the statusline drops the count when the task ends between runs')
      H.eq(0, background.running, 'the event says none runs')
      H.wait(function()
        return #vim.tbl_filter(function(n)
          return n.msg:find('bg-1: killed by the user (SIGTERM); none of its processes is left', 1, true) ~= nil
        end, cap.notify) == 1
      end, 5000, "the server's answer shown", function()
        return cap.notify
      end)
      H.eq('■ bg-1  killed by the user (SIGTERM)', jobs.shown()[1], 'the float shows how it ended')

      -- the chat told both ends, the stop after the run ended
      local text = H.buf_text(chat)
      H.contains(text, '> ⏹ bg-2 exited 3: ' .. FAILING .. '\n>   build failed: missing script dev', 'the failed task in the chat')
      H.contains(text, '> ⏹ bg-1 killed by the user (SIGTERM): ' .. TICKER, 'the stopped task in the chat')
      local run_end = text:find('The ticker runs in the background.', 1, true)
      H.truthy(run_end and text:find('bg-1 killed by the user', run_end, true), 'the stop is told after the run')

      -- :Stepwise kill: an ended task, an unknown one, no id
      api.nvim_set_current_win(api.nvim_list_wins()[1])
      vim.cmd('Stepwise kill bg-1')
      vim.cmd('Stepwise kill bg-9')
      vim.cmd('Stepwise kill')
      H.wait(function()
        local all = table.concat(vim.tbl_map(function(n)
          return n.msg
        end, cap.notify), '\n')
        return all:find('bg-1 is not running (killed by the user (SIGTERM)): nothing to kill', 1, true)
          and all:find('no background task bg-9 in this session (tasks: bg-1, bg-2)', 1, true)
          and all:find('usage: :Stepwise kill {task id}', 1, true)
      end, 10000, 'the answers to the kills', function()
        return cap.notify
      end)
      H.eq({}, vim.fn.getcompletion('Stepwise kill ', 'cmdline'), 'nothing running to complete')
      vim.cmd('normal! \27')
      jobs.close()
      H.eq(nil, jobs.shown(), 'closed')
    end,
  },
})
