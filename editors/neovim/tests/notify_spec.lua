-- Reminders and run endings through vim.notify at quiet levels; the transcript.
local H = require('helpers')

return H.spec({
  {
    name = 'reminders go to vim.notify at DEBUG and to the transcript',
    timeout = 30000,
    fn = function()
      local m, cap = H.run_task('Look around', {
        H.turn({ calls = { H.todo({ { 'Look around', 'in_progress' } }) } }),
        H.turn({ calls = { { 'read_file', { path = 'a.txt' } } } }),
        H.turn({ calls = { { 'read_file', { path = 'a.txt', limit = 1 } } } }),
        H.turn({ text = 'Done looking.' }),
      }, { reminder_rounds = 1 })
      local reminders = vim.tbl_filter(function(n)
        return n.msg:find('todo', 1, true) and n.msg:find('stepwise:', 1, true) and not n.msg:find('run finished', 1, true)
      end, cap.notify)
      H.truthy(#reminders > 0, 'a reminder notification: ' .. vim.inspect(cap.notify))
      H.eq(vim.log.levels.DEBUG, reminders[1].level, 'reminder level')
      local log = table.concat(require('stepwise.log').lines(), '\n')
      H.contains(log, '⚑', 'transcript has the reminder')
      H.contains(log, '→ read_file: ', 'transcript has the tool call')
      H.contains(log, 'Done looking.', 'transcript has the assistant text')
      -- the model got the nag
      local nag = H.find_all(H.recorded(m), function(t)
        return t.type == 'text' and type(t.text) == 'string' and t.text:find('<reminder>', 1, true) ~= nil
      end)
      H.truthy(#nag > 0, 'the model was nagged')
    end,
  },
  {
    name = 'a run that fails ends with a quiet notification carrying the error',
    timeout = 30000,
    fn = function()
      local _, cap, idle = H.run_task('Fail please', { { type = 'http_error', status = 400 } }, nil, 20000)
      H.eq('error', idle.reason, 'idle reason')
      local ended = vim.tbl_filter(function(n)
        return n.msg:find('run failed', 1, true)
      end, cap.notify)
      H.truthy(#ended == 1 and ended[1].level <= vim.log.levels.INFO, 'one quiet run-failed notification: ' .. vim.inspect(cap.notify))
      H.contains(table.concat(require('stepwise.log').lines(), '\n'), 'run ended: error', 'transcript')
    end,
  },
})
