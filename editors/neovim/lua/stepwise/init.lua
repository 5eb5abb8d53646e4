-- stepwise.nvim: the stepwise coding agent in Neovim, on the built-in LSP client.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local client = require('stepwise.client')
local plan = require('stepwise.plan')
local marks = require('stepwise.marks')
local log = require('stepwise.log')
local execute = require('stepwise.execute')
local events = require('stepwise.events')
local lenses = require('stepwise.lenses')

-- The client (below) gets the handlers of the server's messages (above it) here, where the plugin is put together.
client.use_handlers(require('stepwise.handlers').handlers)

M.subcommands = { 'run', 'steer', 'cancel', 'reset', 'plan', 'log', 'status', 'compact', 'checkpoints', 'rewind', 'chat', 'review', 'allow', 'deny', 'jobs', 'kill', 'sessions', 'new', 'apply', 'close', 'discard', 'attach', 'stop' }

local group = api.nvim_create_augroup('stepwise', { clear = true })

local function set_highlights()
  local links = {
    StepwiseStep = 'DiagnosticVirtualTextInfo',
    StepwisePlanNormal = 'NormalFloat',
    StepwisePlanBorder = 'FloatBorder',
    StepwisePlanDone = 'Comment',
    StepwisePlanActive = 'Title',
    StepwisePlanPending = 'NormalFloat',
    StepwisePlanFailed = 'DiagnosticError',
    StepwisePlanSummary = 'Comment',
    StepwiseLogHeader = 'Title',
    StepwiseLogTool = 'Function',
    StepwiseLogError = 'DiagnosticError',
    StepwiseLogReminder = 'DiagnosticWarn',
    StepwiseLogEdit = 'Comment',
    StepwiseReviewSign = 'Changed',
    StepwiseReviewDelete = 'Removed',
  }
  for name, target in pairs(links) do
    api.nvim_set_hl(0, name, { link = target, default = true })
  end
end

--- The folder's session of the current buffer: a chat's own, else the session in view of the buffer's folder
--- (else of the plan window, else of the current directory). See stepwise/current.lua.
M.current_folder = require('stepwise.current').folder

--- The configuration of `vim.lsp.enable('stepwise')` (lsp/stepwise.lua): the plugin's own client.
---@return vim.lsp.Config
function M.lsp_config()
  return client.lsp_config()
end

--- Run a stepwise.* command of the server for a folder.
---@param folder stepwise.Folder
---@param command string
---@param extra table?
---@param cb fun(err: lsp.ResponseError?, result: any)?
function M.execute(folder, command, extra, cb)
  execute.execute(folder, command, extra, cb)
end

--- Start a run in the current folder (asks for the task when none is given).
---@param prompt string?
---@param opts {folder: stepwise.Folder?, plan: boolean?}?
function M.run(prompt, opts)
  opts = opts or {}
  if not prompt or vim.trim(prompt) == '' then
    vim.ui.input({ prompt = 'stepwise task: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.run(input, opts)
      end
    end)
    return
  end
  local folder = opts.folder or M.current_folder()
  folder.prompt = prompt
  folder.prompt_pending = prompt
  -- The images `:Stepwise attach` gave go with it (and wait again if it does not start).
  local attach = require('stepwise.attach')
  local images, taken = attach.take(folder)
  M.execute(folder, 'stepwise.run', { prompt = prompt, mode = require('stepwise.plan_first').mode(opts.plan), images = images }, function(err, result)
    if err then
      attach.restore(folder, taken)
    elseif type(result) == 'table' and result.runId then
      folder.run_id = result.runId
    end
  end)
end

--- `:Stepwise steer {text}`: a line for the agent, read at its next step; with no run going on it starts one.
---@param text string?
---@param opts {folder: stepwise.Folder?}?
function M.steer(text, opts)
  opts = opts or {}
  if not text or vim.trim(text) == '' then
    vim.ui.input({ prompt = 'stepwise steer: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.steer(input, opts)
      end
    end)
    return
  end
  local folder = opts.folder or M.current_folder()
  text = vim.trim(text)
  if folder.state == 'idle' then
    folder.prompt_pending = text -- it starts a run
  end
  M.execute(folder, 'stepwise.steer', { text = text }, function(err)
    if not err then
      log.line(folder.key, '» you: ' .. text, 'StepwiseLogHeader')
    end
  end)
end

--- `:Stepwise plan edit`: the folder's plan as a buffer in its render form; `:w` applies it.
function M.plan_edit(opts)
  local folder = (opts and opts.folder) or M.current_folder()
  local plan_edit = require('stepwise.plan_edit')
  if folder.plan then
    return plan_edit.open(folder)
  end
  M.execute(folder, 'stepwise.plan', nil, function(err, result)
    if err or type(result) ~= 'table' then
      return
    end
    if not folder.plan then
      folder.plan = { items = result.items or {}, completed = result.completed, total = result.total, revision = result.revision }
    end
    plan_edit.open(folder)
  end)
end

function M.cancel(opts)
  if not client.get() then
    util.notify('no run to cancel', vim.log.levels.INFO)
    return
  end
  local folder = (opts and opts.folder) or M.current_folder()
  M.execute(folder, 'stepwise.cancel')
end

function M.reset(opts)
  local folder = (opts and opts.folder) or M.current_folder()
  marks.clear(folder)
  M.execute(folder, 'stepwise.reset', nil, function(err)
    if not err then
      events.emit('reload', { workspace = folder.uri, session = folder.session })
      log.line(folder.key, '— conversation reset', 'StepwiseLogHeader')
    end
  end)
end

--- Toggle the floating window with the live plan.
function M.plan(opts)
  if plan.is_open() then
    plan.close()
    return
  end
  local folder = (opts and opts.folder) or M.current_folder()
  plan.open(folder)
  if not folder.plan then
    M.execute(folder, 'stepwise.plan', nil, function(err, result)
      if not err and type(result) == 'table' and not folder.plan then
        folder.plan = { items = result.items or {}, completed = result.completed, total = result.total }
        plan.update(folder)
      end
    end)
  end
end

--- `:Stepwise status`: the run state, plan, context use and latest compaction; returns the lines.
function M.status(opts)
  local folder = (opts and opts.folder) or M.current_folder()
  local lines = plan.status_lines(folder)
  util.notify(table.concat(lines, '\n'), vim.log.levels.INFO)
  return lines
end

--- `:Stepwise compact`: compact the conversation now (the plan is kept).
function M.compact(opts)
  local folder = (opts and opts.folder) or M.current_folder()
  M.execute(folder, 'stepwise.compact')
end

--- `:Stepwise chat`: the conversation buffer of the current folder.
function M.chat(opts)
  local folder = (opts and opts.folder) or M.current_folder()
  return require('stepwise.chat').open(folder)
end

--- `:Stepwise review [path]`, `:Stepwise review keep|undo [path]`.
---@param what string? nil, 'keep', 'undo' or a path to review
---@param path string?
---@param opts {folder: stepwise.Folder?, range: integer[]?}? `range`: {first, last} lines (keep/undo only those hunks)
function M.review(what, path, opts)
  local folder = (opts and opts.folder) or M.current_folder()
  local review = require('stepwise.review')
  if what == 'keep' or what == 'undo' then
    return review.act(folder, what, path, nil, opts and opts.range)
  end
  return review.open(folder, what)
end

--- Show the transcript.
function M.log()
  log.open()
end

--- The known session of a buffer (nil when none: unlike current_folder(), creates nothing).
M.find_folder = require('stepwise.current').find

--- A short status for a statusline: `stepwise 1/3 ▸ step · 1 job` (see stepwise/statusline.lua).
function M.statusline()
  local ok, folder = pcall(M.find_folder)
  return ok and folder and require('stepwise.statusline').line(folder) or ''
end

--- The `:Stepwise` command.
---@param o {args: string, fargs: string[]}
function M.command(o)
  local sub = o.fargs[1]
  if not sub then
    return M.plan()
  end
  -- `run!` and `plan approve!` (the `!` on the word, as written in the docs; `:Stepwise! ...` works too).
  if sub == 'run' or sub == 'run!' then
    local task = o.args:match('^%s*run!?%s+(.-)%s*$')
    return M.run(task, { plan = o.bang or sub == 'run!' })
  elseif sub == 'plan' and (o.fargs[2] == 'first' or o.fargs[2] == 'approve' or o.fargs[2] == 'approve!') then
    local pf = require('stepwise.plan_first')
    if o.fargs[2] == 'first' then
      return pf.set(o.fargs[3] ~= 'off')
    end
    return pf.approve(M.current_folder(), o.bang or o.fargs[2] == 'approve!')
  elseif sub == 'steer' then
    return M.steer(o.args:match('^%s*steer%s+(.-)%s*$'))
  elseif sub == 'attach' then
    return require('stepwise.attach').command(M.current_folder(), o.args:match('^%s*attach%s+(.-)%s*$'))
  elseif sub == 'plan' and o.fargs[2] == 'edit' then
    return M.plan_edit()
  elseif sub == 'checkpoints' then
    return require('stepwise.checkpoints').pick(M.execute, M.current_folder())
  elseif sub == 'rewind' then
    if not o.fargs[2] then
      return util.notify('usage: :Stepwise rewind {checkpoint id} (:Stepwise checkpoints lists them)', vim.log.levels.ERROR)
    end
    return require('stepwise.checkpoints').rewind(M.execute, M.current_folder(), o.fargs[2])
  elseif sub == 'cancel' then
    return M.cancel()
  elseif sub == 'stop' then
    return require('stepwise.subagents').stop(M.current_folder(), o.fargs[2])
  elseif sub == 'reset' then
    return M.reset()
  elseif sub == 'plan' then
    return M.plan()
  elseif sub == 'log' then
    return M.log()
  elseif sub == 'status' then
    return M.status()
  elseif sub == 'compact' then
    return M.compact()
  elseif sub == 'chat' then
    return M.chat()
  elseif sub == 'jobs' or sub == 'kill' then
    local jobs = require('stepwise.jobs')
    return sub == 'jobs' and jobs.open(M.current_folder()) or jobs.kill(M.current_folder(), o.fargs[2])
  elseif sub == 'allow' or sub == 'deny' then
    -- the oldest open question of the current folder (stepwise/ask)
    local choice = sub == 'deny' and 'deny' or (o.fargs[2] == 'session' and 'allowSession' or 'allow')
    local folder = M.current_folder()
    return require('stepwise.ask').answer(choice, folder and folder.key)
  elseif sub == 'review' then
    local range = (o.range or 0) > 0 and { o.line1, o.line2 } or nil
    if o.fargs[2] == 'comment' then
      local text = o.args:match('^%s*review%s+comment%s+(.-)%s*$')
      return require('stepwise.review').comment(M.current_folder(), text or '', range)
    end
    return M.review(o.fargs[2], o.fargs[3], { range = range })
  elseif vim.tbl_contains({ 'sessions', 'new', 'apply', 'close', 'discard' }, sub) then
    return require('stepwise.sessions').command(M.current_folder(), o.fargs)
  end
  util.notify('unknown subcommand: ' .. sub .. ' (run[!], steer, cancel, reset, plan [edit|first|approve[!]], log, status, compact, checkpoints, rewind, chat, review [keep|undo [path] | comment {text}], allow [session], deny, jobs, kill {id}, stop {sa-n}, sessions, new [worktree] [title], apply|close|discard [session], attach [path])', vim.log.levels.ERROR)
end

function M.complete(arglead, cmdline, _)
  local before = cmdline:match('^%s*%S+%s+(.*)$') or ''
  local function starting(list)
    return vim.tbl_filter(function(s)
      return s:sub(1, #arglead) == arglead
    end, list)
  end
  if before:match('^plan%s+%S*$') then
    return starting({ 'edit', 'first', 'approve' })
  elseif before:match('^review%s+%S*$') then
    return starting({ 'keep', 'undo', 'comment' })
  elseif before:match('^kill%s+%S*$') then
    return starting(require('stepwise.jobs').running_ids(M.current_folder()))
  elseif before:match('^stop%s+%S*$') then
    return starting(require('stepwise.subagents').running_ids(M.current_folder()))
  elseif before:match('^%a+%s+%S*$') and vim.tbl_contains({ 'new', 'apply', 'close', 'discard' }, before:match('^%a+')) then
    return starting(require('stepwise.sessions').complete(M.current_folder(), before:match('^%a+')))
  end
  if before:match('^review%s+comment%s') then
    return {}
  end
  if before:match('^attach%s') then
    return vim.fn.getcompletion(arglead, 'file')
  end
  if before:match('^review%s+%S+%s+%S*$') then
    return require('stepwise.review').complete(M.current_folder(), arglead)
  end
  if before:find('%s') then
    return {}
  end
  return starting(M.subcommands)
end

function M.create_command()
  api.nvim_create_user_command('Stepwise', function(o)
    M.command(o)
  end, {
    nargs = '*',
    range = true,
    bang = true,
    complete = M.complete,
    desc = 'stepwise: run[!] {task} | steer {text} | cancel | reset | plan [edit|first|approve[!]] | log | checkpoints | rewind {id} | chat | review [keep|undo [path]] | allow [session] | deny | jobs | kill {id} | stop {sa-n} | sessions | new [worktree] | apply|close|discard [session] | attach [path]',
  })
end

local function set_keymaps(keys)
  if not keys then
    return
  end
  local actions = {
    run = { function() M.run() end, 'stepwise: run a task' },
    cancel = { M.cancel, 'stepwise: cancel the run' },
    reset = { M.reset, 'stepwise: new conversation' },
    plan = { M.plan, 'stepwise: toggle the plan' },
    log = { M.log, 'stepwise: transcript' },
  }
  for name, lhs in pairs(keys) do
    local action = actions[name]
    if action and type(lhs) == 'string' and lhs ~= '' then
      if vim.fn.maparg(lhs, 'n') == '' or M._mapped[lhs] then
        vim.keymap.set('n', lhs, action[1], { desc = action[2] })
        M._mapped[lhs] = true
      end
    end
  end
end
M._mapped = {}

--- Attach a buffer if it belongs to a folder (starts the client on first use).
function M.attach(buf)
  return client.attach(buf or api.nvim_get_current_buf())
end

--- Stop the client.
function M.stop(timeout)
  plan.close()
  client.stop(timeout)
  for _, f in ipairs(state.all()) do
    marks.clear(f)
  end
  state.clear()
end

---@param opts table?
function M.setup(opts)
  local first = not M._did_setup
  M._did_setup = true
  config.set(opts)
  set_highlights()
  M.create_command()
  api.nvim_clear_autocmds({ group = group })
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = set_highlights })
  api.nvim_create_autocmd('VimResized', { group = group, callback = plan.reposition })
  if config.get().autostart then
    api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
      group = group,
      callback = function(ev)
        -- after the other BufRead autocommands (buftype, filetype) have run
        vim.schedule(function()
          if api.nvim_buf_is_loaded(ev.buf) then
            client.attach(ev.buf)
          end
        end)
      end,
    })
    vim.schedule(function()
      for _, b in ipairs(api.nvim_list_bufs()) do
        if api.nvim_buf_is_loaded(b) then
          client.attach(b)
        end
      end
    end)
  end
  api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(ev)
      local c = client.get()
      if c and c.attached_buffers and c.attached_buffers[ev.buf] then
        local name = api.nvim_buf_get_name(ev.buf)
        local folder = name ~= '' and state.containing(util.normalize(name)) or nil
        if folder and folder.plan and #(folder.plan.items or {}) > 0 then
          lenses.refresh(folder.uri)
        end
      end
    end,
  })
  set_keymaps(config.get().keymaps)
  require('stepwise.review').setup()
  if not first then
    client.push_settings()
  end
  return M
end

return M
