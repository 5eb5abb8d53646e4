-- Benchmark (issue 46): what learning the errors from before adds to the agent's first edit of a file no buffer
-- holds, with a warm language server (pylsp, from tests/intel/setup.sh, configured as a user would for Python):
--   STEPWISE_SPECS=bench/closed_file_bench.lua STEPWISE_TEST_TIMEOUT=900 bash editors/neovim/scripts/test.sh
-- For each of FILES closed files the scripted model edits the file twice in two rounds: the first edit asks Neovim
-- for the file's errors from before (it loads the buffer unshown and waits for pylsp's publish), the second does
-- not (the file's errors are known). Each edit_file call is timed from its `started` to its `finished`
-- notification as the plugin sees them (StepwiseToolCall); the figure is the median of first minus second over
-- the files, with both medians, and the server's own time for each question (its log line "the editor answered
-- the diagnostics from before a change ... in N ms"). Asserts nothing about timing; fails only if a run does not
-- happen as scripted.
local H = require('helpers')
local pylsp = require('pylsp')
local api = vim.api

local FILES = tonumber(vim.env.STEPWISE_BENCH_FILES or '') or 15

local function median(list)
  local s = vim.deepcopy(list)
  table.sort(s)
  local n = #s
  if n == 0 then
    return 0
  end
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

return H.spec({
  {
    name = 'bench: the first edit of a closed file against the second, pylsp warm',
    timeout = 600000,
    fn = function()
      local bin = pylsp.bin()
      local files = { ['calc.py'] = 'x = 1\nprint(x)\n' }
      local turns = {}
      for i = 1, FILES do
        local name = string.format('f%02d.py', i)
        files[name] = 'y = 2\nprint(y)\n'
        turns[#turns + 1] = H.turn({ calls = { { 'edit_file', { path = name, old_text = 'print(y)', new_text = 'print(y)  # a' } } } })
        turns[#turns + 1] = H.turn({ calls = { { 'edit_file', { path = name, old_text = '# a', new_text = '# b' } } } })
      end
      turns[#turns + 1] = H.turn({ text = 'done' })
      local dir = H.workspace(files)
      local m = H.mock(turns)
      H.setup(m)
      local cap = H.capture()
      pylsp.warm(bin, 'pylsp_bench', dir)
      local started = {}
      local took = {} ---@type number[]
      api.nvim_create_autocmd('User', {
        pattern = 'StepwiseToolCall',
        callback = function(ev)
          local d = ev.data or {}
          local id = d.id or d.toolCallId
          if d.name ~= 'edit_file' or not id then
            return
          end
          if d.phase == 'started' then
            started[id] = vim.uv.hrtime()
          elseif d.phase == 'finished' and started[id] then
            took[#took + 1] = (vim.uv.hrtime() - started[id]) / 1e6
          end
        end,
      })
      vim.cmd('Stepwise run edit them')
      H.wait_idle(cap, 500000)
      H.eq(2 * FILES, #took, 'every edit timed')
      local first, second, added = {}, {}, {}
      for i = 1, FILES do
        first[i], second[i] = took[2 * i - 1], took[2 * i]
        added[i] = first[i] - second[i]
      end
      local asked = {}
      for ms in H.read(vim.lsp.get_log_path()):gmatch('the editor answered the diagnostics from before a change for 1 document%(s%) in (%d+) ms') do
        asked[#asked + 1] = tonumber(ms)
      end
      require('runner').out(
        string.format(
          'closed files: %d; first edit median %.1f ms, second %.1f ms, added (paired) median %.1f ms (min %.1f, max %.1f); the question, as the server timed it: median %s ms of %d',
          FILES,
          median(first),
          median(second),
          median(added),
          math.min(unpack(added)),
          math.max(unpack(added)),
          #asked > 0 and tostring(median(asked)) or '?',
          #asked
        )
      )
      pylsp.stop('pylsp_bench')
    end,
  },
})
