-- Context use, the cache share and compactions: in the plan window's footer and `:Stepwise status`.
local H = require('helpers')

return H.spec({
  {
    name = 'context use, cache share and a compaction are shown',
    timeout = 40000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local overflow = {
        type = 'http_error',
        status = 400,
        body = { type = 'error', error = { type = 'invalid_request_error', message = 'prompt is too long: 210000 tokens > 200000 maximum' } },
      }
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Summarise the work', 'in_progress' } }) }, usage = { input_tokens = 4000, output_tokens = 5 } }),
        overflow,
        H.turn({ text = 'SUMMARY of the work so far' }),
        H.turn({ text = 'Done.', usage = { input_tokens = 2000, output_tokens = 3, cache_read_input_tokens = 22000 } }),
      })
      H.setup(m)
      local cap = H.capture()
      local plan = require('stepwise.plan')
      local compacted = nil
      vim.api.nvim_create_autocmd('User', {
        pattern = 'StepwiseCompacted',
        callback = function(ev)
          compacted = ev.data
        end,
      })

      vim.cmd('Stepwise run Do the work')
      H.wait_idle(cap, 20000)
      H.wait(function()
        return compacted ~= nil
      end, 10000, 'the StepwiseCompacted event')
      H.truthy(tonumber(compacted.tokensBefore) ~= nil and tonumber(compacted.tokensAfter) ~= nil, 'token counts')

      local lines = require('stepwise').status()
      H.eq('stepwise: idle', lines[1], 'the state')
      H.eq('plan: 0/1 ▸ Summarise the work', lines[2], 'the plan')
      H.eq('context: 24k of 200k tokens (12%) · 92% of the prompt from the cache', lines[3], 'context use')
      H.truthy(lines[4] and lines[4]:match('^compacted: %S+ → %S+ tokens; the plan is kept$'), 'the compaction: ' .. tostring(lines[4]))

      vim.cmd('Stepwise plan')
      H.eq({ '[>] #1: Summarise the work', '', '(0/1 completed)' }, plan.lines(), 'the plan lines are the plan')
      local footer = plan.footer() or ''
      H.truthy(footer:match('^ ctx 12%% · cache 92%% · compacted %S+→%S+ $'), 'the footer: ' .. footer)
      vim.cmd('Stepwise plan')
      -- The summary request went out without tools, as the server's compaction asks.
      local reqs = H.recorded(m)
      H.eq(4, #reqs, 'four requests: plan, overflow, summary, retry')
    end,
  },
})
