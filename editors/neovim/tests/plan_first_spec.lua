-- Plan first: :Stepwise run! plans read-only (a write is refused, nothing changes), the run ends plan_ready;
-- `> comment` lines under an item of the plan edit buffer go to the model as one planning round;
-- :Stepwise plan approve! carries the plan out from a fresh context and the edit lands; the chat says the plan
-- was approved (not edited).
local H = require('helpers')
local api = vim.api

--- Every string in a recorded request.
local function strings(v, out)
  out = out or {}
  if type(v) == 'string' then
    out[#out + 1] = v
  elseif type(v) == 'table' then
    for _, x in pairs(v) do
      strings(x, out)
    end
  end
  return out
end

local function has(req, needle)
  for _, s in ipairs(strings(req)) do
    if s:find(needle, 1, true) then
      return s
    end
  end
end

local function tool_names(req)
  local names = {}
  for _, t in ipairs((req.body or req).tools or {}) do
    names[#names + 1] = t.name
  end
  return names
end

-- What plan mode offers besides `bash`, which it offers only inside the read-only sandbox (where that can
-- start): what writes must never be among them.
local function planning_tools(req)
  return vim.tbl_filter(function(n)
    return n ~= 'bash'
  end, tool_names(req))
end

return H.spec({
  {
    name = ':Stepwise run! plans without changing anything; > comments revise it; plan approve! acts',
    timeout = 90000,
    fn = function()
      local dir = H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({ calls = { { 'write_file', { path = 'a.txt', content = 'too early' } } } }),
        H.turn({ calls = { H.todo({ { 'Change a.txt', 'pending' } }) } }),
        H.turn({ text = 'Planned.' }),
        H.turn({ calls = { H.todo({ { 'Change a.txt', 'pending' }, { 'Check it', 'pending' } }) } }),
        H.turn({ text = 'Revised.' }),
        H.turn({ calls = { { 'edit_file', { path = 'a.txt', old_text = 'alpha', new_text = 'beta' } } } }),
        H.turn({ text = 'Done.' }),
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('edit a.txt')
      local file = api.nvim_get_current_buf()
      vim.cmd('Stepwise run! change a.txt')
      local idle = H.wait_idle(cap, 20000)
      H.eq('plan_ready', idle.reason, 'the planning run ends with its plan waiting')
      H.eq('alpha\n', H.read(dir .. '/a.txt'), 'nothing changed on disk')
      H.eq({ 'alpha' }, api.nvim_buf_get_lines(file, 0, -1, false), 'nor in the buffer')
      local reqs = H.recorded(m)
      -- (Neovim answers stepwise/query: the read-only code-intelligence tools are offered too, never rename_symbol)
      H.eq({ 'read_file', 'todo', 'diagnostics', 'code_nav', 'task' }, planning_tools(reqs[1]), 'plan mode offers only what changes nothing (task: a read-only child, explore)')
      H.truthy(has(reqs[2], 'Error: plan mode: write_file'), 'the write is refused')
      local told = vim.tbl_filter(function(n)
        return n.msg:find('plan ready: :Stepwise plan approve[!], or comment with > lines in :Stepwise plan edit', 1, true) ~= nil
      end, cap.notify)
      H.eq(1, #told, 'the user is told')

      -- A comment under item #1 in the plan edit buffer: one planning round, still planning.
      vim.cmd('Stepwise plan edit')
      local buf = api.nvim_get_current_buf()
      api.nvim_buf_set_lines(buf, 1, 1, false, { '> and check it afterwards' })
      local from = #cap.status
      vim.cmd('write')
      idle = H.wait_idle(cap, 20000, from)
      H.eq('plan_ready', idle.reason, 'a comment round ends with the plan waiting again')
      reqs = H.recorded(m)
      local block = has(reqs[4], '<plan-comments>')
      H.truthy(block and block:find('On #1 (Change a.txt): and check it afterwards', 1, true), 'the comment under its item: ' .. tostring(block))
      H.eq({ 'read_file', 'todo', 'diagnostics', 'code_nav', 'task' }, planning_tools(reqs[4]), 'still in plan mode')
      H.eq({ '[ ] #1: Change a.txt', '[ ] #2: Check it', '', '(0/2 completed)' }, api.nvim_buf_get_lines(buf, 0, -1, false), 'the revised plan, comments gone')

      -- The chat is open when the plan is approved: it says so, not that the plan was edited.
      vim.cmd('Stepwise chat')
      local chat = api.nvim_get_current_buf()
      H.eq('stepwise://chat', api.nvim_buf_get_name(chat), 'the chat buffer')

      from = #cap.status
      vim.cmd('Stepwise plan approve!')
      idle = H.wait_idle(cap, 20000, from)
      H.eq('end_turn', idle.reason, 'the approved run acts')
      H.wait(function()
        return H.buf_text(chat):find('✓ you approved the plan', 1, true)
      end, 10000, 'the approval in the chat', function()
        return H.buf_text(chat)
      end)
      H.eq(nil, H.buf_text(chat):find('you edited the plan', 1, true), 'an approval is not an edit: ' .. H.buf_text(chat))
      reqs = H.recorded(m)
      local first = reqs[6].body or reqs[6]
      H.eq(1, #first.messages, 'a fresh context: the task and the plan only')
      H.truthy(has(first, 'change a.txt\n\n<plan-approved>'), 'the approval, once, after the task')
      H.wait(function()
        return api.nvim_buf_get_lines(file, 0, -1, false)[1] == 'beta'
      end, 10000, 'the edit in the buffer')
    end,
  },
})
