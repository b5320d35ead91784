export * from './index'
export * from './stream'
