-- The plan as a shared document: :Stepwise plan edit (a buffer in render form, :w applies it through
-- stepwise.editPlan), errors keep the buffer; :Stepwise steer mid-run and idle.
local H = require('helpers')
local api = vim.api

--- Text blocks of every recorded model request, in order, as one list of strings per request.
local function request_texts(m)
  local out = {}
  for _, req in ipairs(H.recorded(m)) do
    local texts = {}
    for _, b in ipairs(H.find_all(req.body or req, function(t)
      return type(t.text) == 'string' or type(t.content) == 'string'
    end)) do
      texts[#texts + 1] = type(b.text) == 'string' and b.text or b.content
    end
    out[#out + 1] = texts
  end
  return out
end

local function has_text(texts, needle)
  for _, t in ipairs(texts) do
    if t:find(needle, 1, true) then
      return t
    end
  end
end

--- Runs a task whose model makes a two-item plan and ends; returns the capture.
local function planned(m)
  H.setup(m)
  local cap = H.capture()
  vim.cmd('edit a.txt')
  vim.cmd('Stepwise run Plan the change')
  local idle = H.wait_idle(cap, 15000)
  H.eq('end_turn', idle.reason, 'the first run ends')
  return cap
end

local function plan_turns()
  return {
    H.turn({ calls = { H.todo({ { 'Read a.txt', 'completed' }, { 'Change a.txt', 'in_progress' } }) } }),
    H.turn({ text = 'Planned.' }),
  }
end

local function errors_with(cap, needle)
  return vim.tbl_filter(function(n)
    return n.level == vim.log.levels.ERROR and n.msg:find(needle, 1, true) ~= nil
  end, cap.notify)
end

return H.spec({
  {
    name = ':Stepwise plan edit shows the render form; :w applies it and the next request tells the model',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local steps = plan_turns()
      steps[#steps + 1] = H.turn({ text = 'Noted.' })
      local m = H.mock(steps)
      local cap = planned(m)
      vim.cmd('Stepwise plan edit')
      local buf = api.nvim_get_current_buf()
      H.eq('acwrite', vim.bo[buf].buftype, 'the plan buffer is written by the plugin')
      H.eq({ '[x] #1: Read a.txt', '[>] #2: Change a.txt', '', '(1/2 completed)' }, api.nvim_buf_get_lines(buf, 0, -1, false), 'the render form')
      H.eq(false, vim.bo[buf].modified, 'a fresh plan buffer is unmodified')

      api.nvim_buf_set_lines(buf, 1, 2, false, { '[>] #2: Change a.txt carefully', '[ ] Test the change' })
      local plans = #cap.plan
      vim.cmd('write')
      local p = H.wait(function()
        local last = #cap.plan > plans and H.last_plan(cap)
        return last and #last.items == 3 and last
      end, 10000, 'the edited plan from the server', function()
        return { plan = cap.plan, notify = cap.notify }
      end)
      H.eq('Change a.txt carefully', p.items[2].text, 'the edited text')
      H.eq('in_progress', p.items[2].status, 'its status')
      H.eq({ 'Test the change', 'pending' }, { p.items[3].text, p.items[3].status }, 'the new item')
      H.eq('user', p.by, 'the plan was changed by the user')
      H.truthy(type(p.revision) == 'number', 'the plan carries a revision: ' .. vim.inspect(p))
      H.wait(function()
        return not vim.bo[buf].modified and api.nvim_buf_get_lines(buf, 2, 3, false)[1]:match('^%[ %] #%S+: Test the change$')
      end, 5000, 'the buffer shows the plan as the server keeps it (the new item has an id)', function()
        return api.nvim_buf_get_lines(buf, 0, -1, false)
      end)
      H.eq({}, errors_with(cap, ''), 'no error')

      -- The next prompt carries the edit, once.
      local before = #cap.status
      vim.cmd('buffer a.txt')
      vim.cmd('Stepwise run Go on')
      H.wait_idle(cap, 15000, before)
      local texts = request_texts(m)
      local edit = has_text(texts[#texts], '<plan-edit>')
      H.truthy(edit, 'the request after the edit carries <plan-edit>: ' .. vim.inspect(texts[#texts]))
      H.contains(edit, '<plan-edit>The user changed the plan. It is now:\n[x] #1: Read a.txt\n[>] #2: Change a.txt carefully\n[ ] #', 'the block')
      H.contains(edit, ': Test the change', 'the new item in the block')
      local count = 0
      for _, t in ipairs(texts[#texts]) do
        local _, n = t:gsub('<plan%-edit>', '')
        count = count + n
      end
      H.eq(1, count, 'the edit is told once')
    end,
  },
  {
    name = 'a broken rule is shown and the buffer kept; a plan that changed meanwhile is refused',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock(plan_turns())
      local cap = planned(m)
      vim.cmd('Stepwise plan edit')
      local buf = api.nvim_get_current_buf()
      local folder = require('stepwise').current_folder()
      local before = vim.deepcopy(folder.plan)

      -- Two items in progress: the rule's text, nothing changes, the buffer keeps the user's text.
      local broken = { '[>] #1: Read a.txt', '[>] #2: Change a.txt', '' }
      api.nvim_buf_set_lines(buf, 0, -1, false, broken)
      vim.cmd('write')
      H.wait(function()
        return #errors_with(cap, 'Only one task can be in_progress at a time') > 0
      end, 10000, 'the rule as an error', function()
        return cap.notify
      end)
      H.eq(broken, api.nvim_buf_get_lines(buf, 0, -1, false), 'the buffer is kept')
      H.eq(true, vim.bo[buf].modified, 'still modified')
      H.eq(before.items, folder.plan.items, 'the plan did not change')

      -- Someone else changes the plan (another client's stepwise.editPlan); the modified buffer is stale.
      local plans = #cap.plan
      require('stepwise').execute(folder, 'stepwise.editPlan', {
        items = { { id = '1', text = 'Read a.txt', status = 'completed' }, { id = '2', text = 'Change a.txt', status = 'completed' } },
      })
      H.wait(function()
        return #cap.plan > plans and H.last_plan(cap).completed == 2
      end, 10000, 'the other change', function()
        return cap.plan
      end)
      H.eq(broken, api.nvim_buf_get_lines(buf, 0, -1, false), 'a modified buffer is not overwritten')
      api.nvim_buf_set_lines(buf, 0, -1, false, { '[x] #1: Read a.txt', '[ ] #2: Change a.txt again' })
      vim.cmd('write')
      H.wait(function()
        return #errors_with(cap, 'changed') > 0
      end, 10000, 'the stale revision refused', function()
        return cap.notify
      end)
      H.eq(true, vim.bo[buf].modified, 'the buffer is kept after a stale write')
      H.eq(2, folder.plan.completed, 'the other change stands')
      -- :edit! shows the plan as it is now.
      vim.cmd('edit!')
      H.eq({ '[x] #1: Read a.txt', '[x] #2: Change a.txt', '', '(2/2 completed)' }, api.nvim_buf_get_lines(buf, 0, -1, false), 'reloaded')
    end,
  },
  {
    name = ':Stepwise steer reaches the model at its next request mid-run, verbatim; idle it starts a run',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock({
        H.turn({ calls = { { 'bash', { command = 'echo hi' } } } }),
        H.turn({ text = 'Will do.' }),
        H.turn({ text = 'Started from a steer.' }),
      })
      H.setup(m, { approval = 'ask' })
      local cap = H.capture()
      local pending
      H.stub_select(function(items, opts, on_choice)
        for _, it in ipairs(items) do
          if (opts.format_item and opts.format_item(it) or it.title) == 'Allow' then
            pending = function()
              on_choice(it)
            end
          end
        end
      end)
      vim.cmd('edit a.txt')
      vim.cmd('Stepwise run Say hi')
      H.wait(function()
        return pending
      end, 15000, 'the run waits for approval', function()
        return cap.status
      end)
      vim.cmd('Stepwise steer Use printf instead, and keep it short')
      -- The steer is acknowledged before the run goes on.
      H.wait(function()
        return vim.tbl_contains(require('stepwise.log').lines(), '» you: Use printf instead, and keep it short')
      end, 10000, 'the steer in the transcript')
      pending()
      H.wait_idle(cap, 15000)
      local texts = request_texts(m)
      H.eq(2, #texts, 'two model requests')
      H.truthy(not has_text(texts[1], 'Use printf instead'), 'not in the request before')
      H.truthy(has_text(texts[2], 'Use printf instead, and keep it short'), 'the steer in the next request: ' .. vim.inspect(texts[2]))

      -- Idle: a steer starts a run with its text.
      local before = #cap.status
      vim.cmd('Stepwise steer Now summarise')
      local idle = H.wait_idle(cap, 15000, before)
      H.eq('end_turn', idle.reason, 'the steered run ends')
      texts = request_texts(m)
      H.eq(3, #texts, 'a third request')
      H.truthy(has_text(texts[3], 'Now summarise'), 'the steer started the run: ' .. vim.inspect(texts[3]))
    end,
  },
})
